"""Question-side training (``train_passage_encoder: false``): the passage encoder keeps its weights,
the vectors a step scores are those an index built with it holds, the question encoder learns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from dpr_components.dpr_data.examples import Ctx
from dpr_components.dpr_data.loading import load_training_examples
from dpr_components.encoder_training.frozen_passages import FrozenPassageVectors
from dpr_components.encoder_training.settings import EncoderTrainingSettings
from dpr_components.encoder_training.train import train
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.text_encoder import TextEncoder
from tests.helpers.corpora import write_training_data
from tests.helpers.encoder_training import tiny_run


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(next(folder.glob("*.safetensors"))))


def test_vectors_equal_the_indexing_encoder_and_unseen_passages_are_encoded(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    vectors = FrozenPassageVectors(EncoderSettings(model=str(tiny_bert_dir)), tmp_path / "cache", show_progress=False)
    first = [Ctx("Title", "a passage about cats"), Ctx("", "an untitled passage")]
    vectors.add(first)
    assert len(vectors) == 2
    unseen = Ctx("Other", "a passage first met in a batch")
    got = vectors.lookup([unseen, first[0], first[0]])
    assert len(vectors) == 3 and not got.requires_grad
    encoder = TextEncoder(EncoderSettings(model=str(tiny_bert_dir)))
    expected = encoder.encode_passages([unseen.text, first[0].text], ["Other", "Title"])
    np.testing.assert_allclose(got[:2].numpy(), expected, atol=1e-6)
    assert torch.equal(got[1], got[2])
    # A second table over the same cache encodes nothing again: the cache answers.
    again = FrozenPassageVectors(EncoderSettings(model=str(tiny_bert_dir)), tmp_path / "cache", show_progress=False)
    again.encoder._encode = None  # type: ignore[assignment]  # any encoding would fail
    again.add(first)
    np.testing.assert_array_equal(again.lookup(first).numpy(), vectors.lookup(first).numpy())


@pytest.mark.timeout(120)
def test_question_side_run_trains_only_the_question_encoder(tiny_bert_dir: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("DPR_CACHE_DIR", str(tmp_path / "cache"))
    examples = load_training_examples(write_training_data(tmp_path / "train.jsonl")).examples
    config = tiny_run(tiny_bert_dir, epochs=2, train_passage_encoder=False, similarity="cosine")
    result = train(config, examples, tmp_path / "run", show_progress=False)
    assert result.steps == 6
    start = tmp_path / "start"
    train(
        EncoderTrainingSettings(**{**config.to_dict(), "max_steps": 1, "learning_rate": 1e-12}),
        examples,
        start,
        show_progress=False,
    )
    final, untouched = Path(result.final_dir), start / "final"
    trained_q, start_q = _weights(final / "question_encoder"), _weights(untouched / "question_encoder")
    assert any(not torch.equal(trained_q[k], start_q[k]) for k in trained_q)
    trained_p, start_p = _weights(final / "passage_encoder"), _weights(untouched / "passage_encoder")
    assert trained_p.keys() == start_p.keys()
    assert all(torch.equal(trained_p[k], start_p[k]) for k in trained_p)
    # The exported passage encoder makes the vectors training scored against.
    passage = TextEncoder(EncoderSettings(model=str(final / "passage_encoder")))
    table = FrozenPassageVectors(
        EncoderSettings(model=str(tiny_bert_dir), pooling=passage.pooling, normalize=True, max_length=32),
        None,
        show_progress=False,
    )
    ctx = examples[0].positives[0]
    np.testing.assert_allclose(
        passage.encode_passages([ctx.text], [ctx.title])[0], table.lookup([ctx])[0].numpy(), atol=1e-5
    )


def test_settings_that_cannot_go_with_fixed_passages_are_refused() -> None:
    with pytest.raises(ValueError, match="tie_encoders"):
        EncoderTrainingSettings(train_passage_encoder=False, tie_encoders=True)
    with pytest.raises(ValueError, match="grad_cache_chunk"):
        EncoderTrainingSettings(train_passage_encoder=False, grad_cache_chunk=8)


def test_evaluation_reuses_pool_vectors_only_of_an_encoder_making_the_same_vectors(
    tiny_bert_dir: Path, tiny_dpr_dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    import shutil

    from dpr_components.corpus.passages import Passage
    from training.retriever.evaluate import same_vectors_encoder

    passages = [
        Passage(id=f"d{i}#0", title=f"T{i}", text=f"passage number {i} about things", document_id=f"d{i}", index=0)
        for i in range(40)
    ]
    copy = tmp_path / "copy"
    shutil.copytree(tiny_bert_dir, copy)
    assert same_vectors_encoder(str(copy), str(tiny_bert_dir), passages).settings.model == str(tiny_bert_dir)
    with pytest.raises(ValueError, match="does not make the vectors"):
        same_vectors_encoder(str(tiny_dpr_dirs[1]), str(tiny_bert_dir), passages)


@pytest.mark.timeout(180)
def test_question_encoder_alone_serves_a_store_indexed_with_the_fixed_passage_encoder(
    tiny_st_dir: Path, tiny_bert_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    from haystack import Document

    from dpr_components.encoder_training.convert import question_encoder_only
    from dpr_components.encoders.pairing import expected_passage_digest, weights_digest
    from haystack_integrations.components.embedders.dpr.passage_embedder import PassageEmbedder
    from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever
    from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

    monkeypatch.setenv("DPR_CACHE_DIR", str(tmp_path / "cache"))
    examples = load_training_examples(write_training_data(tmp_path / "train.jsonl")).examples
    config = tiny_run(tiny_st_dir, max_length=64, train_passage_encoder=False, similarity="cosine")
    pair = Path(train(config, examples, tmp_path / "run", show_progress=False).final_dir)

    shipped = question_encoder_only(pair, tmp_path / "shipped" / "question_encoder", str(tiny_st_dir), fp16=True)
    assert expected_passage_digest(str(shipped)) == weights_digest(str(tiny_st_dir))
    with pytest.raises(ValueError, match="does not make the vectors"):
        question_encoder_only(pair, tmp_path / "wrong", str(tiny_bert_dir))  # not normalised: other vectors
    assert not (tmp_path / "wrong").exists()

    store = EmbeddedDocumentStore(path=str(tmp_path / "store"))
    documents = [Document(content=e.positives[0].text, meta={"title": e.positives[0].title}) for e in examples]
    store.write_documents(PassageEmbedder(model=str(tiny_st_dir)).run(documents)["documents"])
    retriever = DenseRetriever(document_store=store, model=str(shipped), top_k=3)
    assert len(retriever.run(query=examples[0].question)["documents"]) == 3
    with pytest.raises(ValueError, match="another passage encoder"):
        DenseRetriever(document_store=store, model=str(pair / "question_encoder"), top_k=3).run(
            query=examples[0].question
        )
