"""DenseRetriever refuses a store indexed by a passage encoder that does not go with its question encoder."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from dpr_components.encoders.pairing import (
    META_FIELD,
    PAIR_FILE,
    encoder_models,
    expected_passage_digest,
    paired_passage_model,
    weights_digest,
    write_pair_files,
)
from haystack_integrations.components.embedders.dpr.passage_embedder import PassageEmbedder
from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

PASSAGES = {
    "hamlet": "Hamlet is a tragedy written by William Shakespeare.",
    "everest": "Mount Everest is the highest mountain on Earth.",
    "curie": "Marie Curie won the Nobel Prize in Physics in 1903.",
}


@pytest.fixture(scope="module")
def trained_pair(tiny_dpr_dirs: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trained pair's layout: ``question_encoder/`` next to ``passage_encoder/``."""
    pair = tmp_path_factory.mktemp("pair")
    shutil.copytree(tiny_dpr_dirs[0], pair / "question_encoder")
    shutil.copytree(tiny_dpr_dirs[1], pair / "passage_encoder")
    return pair


def _index(passage_model: Path | str) -> EmbeddedDocumentStore:
    from haystack import Document

    documents = [Document(id=key, content=text) for key, text in PASSAGES.items()]
    embedder = PassageEmbedder(model=str(passage_model), cache_dir=None, progress_bar=False)
    embedder.warm_up()
    store = EmbeddedDocumentStore()
    store.write_documents(embedder.run(documents)["documents"])
    return store


def test_passages_are_stamped_with_their_encoder(trained_pair: Path) -> None:
    store = _index(trained_pair / "passage_encoder")
    stamps = {d.meta[META_FIELD] for d in store.filter_documents()}
    assert stamps == {weights_digest(str(trained_pair / "passage_encoder"))}


def test_matching_pair_retrieves(trained_pair: Path) -> None:
    store = _index(trained_pair / "passage_encoder")
    retriever = DenseRetriever(document_store=store, model=str(trained_pair / "question_encoder"))
    retriever.warm_up()
    assert len(retriever.run(query="who wrote hamlet", top_k=3)["documents"]) == 3


def test_question_encoder_of_another_pair_is_refused(trained_pair: Path, tiny_st_dir: Path) -> None:
    store = _index(tiny_st_dir)  # 32-d like the pair, so only the stamp tells them apart
    retriever = DenseRetriever(document_store=store, model=str(trained_pair / "question_encoder"))
    with pytest.raises(ValueError, match="embedded by another passage encoder") as refused:
        retriever.warm_up()  # the store records its passage encoder: refused before any query
    assert "re-index the store (haystack run index" in str(refused.value)
    assert f"--set embedder.model={trained_pair / 'passage_encoder'})" in str(refused.value)
    with pytest.raises(ValueError, match="embedded by another passage encoder"):
        retriever.run(query="who wrote hamlet", top_k=3)


def test_shared_encoder_is_its_own_pair(tiny_st_dir: Path, trained_pair: Path) -> None:
    assert paired_passage_model(str(tiny_st_dir)) == str(tiny_st_dir)
    store = _index(trained_pair / "passage_encoder")
    retriever = DenseRetriever(document_store=store, model=str(tiny_st_dir))
    with pytest.raises(ValueError, match="re-index the store"):
        retriever.warm_up()


def test_lone_question_encoder_is_not_checked(tiny_dpr_dirs: tuple[Path, Path], tiny_st_dir: Path) -> None:
    """A DPRQuestionEncoder folder without a sibling passage encoder: the pairing cannot be known."""
    assert paired_passage_model(str(tiny_dpr_dirs[0])) is None
    store = _index(tiny_st_dir)
    retriever = DenseRetriever(document_store=store, model=str(tiny_dpr_dirs[0]))
    retriever.warm_up()
    assert retriever.run(query="who wrote hamlet", top_k=2)["documents"]


def test_pair_files_travel_with_a_copied_question_encoder(
    trained_pair: Path, tiny_st_dir: Path, tmp_path: Path
) -> None:
    """Copied out of its pair's folder, a question encoder still knows its passage encoder."""
    pair = Path(shutil.copytree(trained_pair, tmp_path / "pair"))
    digest = write_pair_files(pair / "question_encoder", pair / "passage_encoder")
    lone = Path(shutil.copytree(pair / "question_encoder", tmp_path / "elsewhere"))
    assert (lone / PAIR_FILE).is_file() and expected_passage_digest(str(lone)) == digest
    with pytest.raises(ValueError, match="embedded by another passage encoder"):
        DenseRetriever(document_store=_index(tiny_st_dir), model=str(lone)).warm_up()
    retriever = DenseRetriever(document_store=_index(pair / "passage_encoder"), model=str(lone))
    retriever.warm_up()
    assert retriever.run(query="who wrote hamlet", top_k=2)["documents"]


def test_passage_encoder_is_refused_as_question_encoder(trained_pair: Path) -> None:
    store = _index(trained_pair / "passage_encoder")
    with pytest.raises(ValueError, match="is a passage encoder"):
        DenseRetriever(document_store=store, model=str(trained_pair / "passage_encoder")).warm_up()


def test_store_is_checked_once_per_recorded_encoder(trained_pair: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import haystack_integrations.components.retrievers.dpr.dense_retriever as retrievers

    calls = []
    original = retrievers.check_pairing
    monkeypatch.setattr(retrievers, "check_pairing", lambda *args: calls.append(args) or original(*args))
    retriever = DenseRetriever(
        document_store=_index(trained_pair / "passage_encoder"), model=str(trained_pair / "question_encoder")
    )
    retriever.warm_up()
    for _ in range(3):
        retriever.run(query="who wrote hamlet", top_k=3)
    assert len(calls) == 1


@pytest.mark.integration
def test_committed_question_encoder_records_its_passage_encoder() -> None:
    """The default question encoder was trained against MiniLM's fixed passage vectors: its pair file
    names MiniLM, whose digest a store indexed by pipelines/index.yml carries."""
    from tests.reliability.harness import REPO

    question = REPO / "models" / "dpr-minilm-multi" / "question_encoder"
    record = json.loads((question / PAIR_FILE).read_text())
    assert record["role"] == "question" and record["passage_model"] == "bundled:all-MiniLM-L6-v2"
    assert (
        expected_passage_digest(str(question))
        == weights_digest("bundled:all-MiniLM-L6-v2")
        == record["passage_encoder"]
    )


@pytest.mark.integration
def test_committed_pair_refuses_a_minilm_store_naming_the_passage_encoder_to_index_with() -> None:
    """bundled:dpr-minilm-pair trained both encoders: a store indexed with MiniLM is refused, the error
    naming the pair's passage encoder, and a store indexed with that encoder serves it."""
    question, passage = encoder_models("bundled:dpr-minilm-pair")
    assert (Path(question).name, Path(passage).name) == ("question_encoder", "passage_encoder")
    assert expected_passage_digest(question) == weights_digest(passage) != weights_digest("bundled:all-MiniLM-L6-v2")
    with pytest.raises(ValueError, match=re.escape("--set embedder.model=bundled:dpr-minilm-pair/passage_encoder")):
        DenseRetriever(
            document_store=_index("bundled:all-MiniLM-L6-v2"), model="bundled:dpr-minilm-pair/question_encoder"
        ).warm_up()
    store = _index("bundled:dpr-minilm-pair/passage_encoder")
    retriever = DenseRetriever(document_store=store, model="bundled:dpr-minilm-pair/question_encoder")
    retriever.warm_up()
    assert retriever.run(query="who wrote hamlet", top_k=1)["documents"][0].id == "hamlet"


def test_encoder_models_names_both_sides(tmp_path: Path, tiny_bert_dir: Path) -> None:
    import shutil

    from dpr_components.encoders.pairing import write_question_pair_file

    pair = tmp_path / "pair"
    for side in ("question_encoder", "passage_encoder"):
        shutil.copytree(tiny_bert_dir, pair / side)
    assert encoder_models(str(pair)) == (str(pair / "question_encoder"), str(pair / "passage_encoder"))
    alone = tmp_path / "alone"
    shutil.copytree(tiny_bert_dir, alone)
    assert encoder_models(str(alone)) == (str(alone), str(alone))
    write_question_pair_file(alone, str(tiny_bert_dir))
    assert encoder_models(str(alone)) == (str(alone), str(tiny_bert_dir))
    assert encoder_models("bundled:all-MiniLM-L6-v2") == ("bundled:all-MiniLM-L6-v2",) * 2


def test_the_passage_encoder_to_index_with_is_named_as_recorded(
    trained_pair: Path, tiny_bert_dir: Path, tiny_st_dir: Path, tmp_path: Path
) -> None:
    """The re-index hint names a pair's sibling passage encoder, else the one a pair file records."""
    from dpr_components.encoders.pairing import passage_model_reference, write_question_pair_file

    assert passage_model_reference(str(trained_pair / "question_encoder")) == str(trained_pair / "passage_encoder")
    alone = Path(shutil.copytree(tiny_bert_dir, tmp_path / "alone"))
    write_question_pair_file(alone, str(tiny_st_dir))
    assert passage_model_reference(str(alone)) == str(tiny_st_dir)
