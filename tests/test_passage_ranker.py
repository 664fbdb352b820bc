"""PassageRanker: a reader's selection head re-ranking retrieved passages."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from haystack import Document, Pipeline

from dpr_components.rankers.passage_ranker import PassageRanker
from dpr_components.readers.inputs import InputSettings
from dpr_components.readers.model import shared_reader
from dpr_components.readers.predict import input_relevance, reader_input
from tests.helpers.corpora import SMALL_CORPUS

pytestmark = pytest.mark.usefixtures("one_thread")

REPO = Path(__file__).resolve().parents[1]


def _documents() -> list[Document]:
    return [
        Document(id=r["id"], content=r["text"], meta={"title": r["title"]}, score=10.0 - i)
        for i, r in enumerate(SMALL_CORPUS)
    ]


def test_ranks_by_the_selection_logit(tiny_reader_dir: Path) -> None:
    documents = _documents()
    ranker = PassageRanker(model=str(tiny_reader_dir), top_k=3, precision="fp32")
    result = ranker.run(query="who wrote hamlet", documents=documents)["documents"]
    reader, tokenizer = shared_reader(str(tiny_reader_dir))
    passages = [(d.meta["title"], d.content or "") for d in documents]
    expected = input_relevance(reader, reader_input(tokenizer, "who wrote hamlet", passages, InputSettings()))
    order = sorted(range(len(documents)), key=lambda i: -expected[i])[:3]
    assert [d.id for d in result] == [documents[i].id for i in order]
    assert [d.score for d in result] == pytest.approx([expected[i] for i in order])
    assert [d.meta["retrieval_score"] for d in result] == [documents[i].score for i in order]
    assert documents[0].score == 10.0 and "retrieval_score" not in documents[0].meta  # inputs untouched
    assert len(ranker.run(query="who wrote hamlet", documents=documents, top_k=10)["documents"]) == len(documents)


def test_equal_logits_keep_the_incoming_order(tiny_reader_dir: Path) -> None:
    same = [Document(id=f"copy{i}", content="Identical passage text.") for i in range(4)]
    result = PassageRanker(model=str(tiny_reader_dir), precision="fp32").run(query="anything", documents=same)
    assert [d.id for d in result["documents"]] == ["copy0", "copy1", "copy2", "copy3"]


def test_documents_without_text_are_left_out_and_bad_input_is_refused(tiny_reader_dir: Path) -> None:
    ranker = PassageRanker(model=str(tiny_reader_dir))
    empty = [Document(id="no-text"), Document(id="blank", content="  ")]
    assert ranker.run(query="who wrote hamlet", documents=empty) == {"documents": []}
    with pytest.raises(ValueError, match="top_k"):
        ranker.run(query="who wrote hamlet", documents=_documents(), top_k=0)
    with pytest.raises(ValueError, match="query"):
        ranker.run(query="   ", documents=_documents())
    with pytest.raises(ValueError, match="precision"):
        PassageRanker(precision="fp8")  # type: ignore[arg-type]


def test_async_equals_sync(tiny_reader_dir: Path) -> None:
    ranker = PassageRanker(model=str(tiny_reader_dir), top_k=4, precision="fp32")
    sync = ranker.run(query="highest mountain", documents=_documents())["documents"]
    in_async = asyncio.run(ranker.run_async(query="highest mountain", documents=_documents()))["documents"]
    assert [(d.id, d.score) for d in sync] == [(d.id, d.score) for d in in_async]


def test_round_trips_through_a_pipeline_file(tiny_reader_dir: Path) -> None:
    pipeline = Pipeline()
    ranker = PassageRanker(model=str(tiny_reader_dir), top_k=2, max_length=192, stride=32, batch_size=8)
    pipeline.add_component("ranker", ranker)
    text = pipeline.dumps()
    assert "haystack_integrations.components.rankers.dpr.PassageRanker" in text
    rebuilt = Pipeline.loads(text).get_component("ranker")
    assert isinstance(rebuilt, PassageRanker) and rebuilt.to_dict() == ranker.to_dict()
    assert rebuilt.input_settings.max_length == 192 and rebuilt.batch_size == 8


def test_the_bundled_reader_puts_the_answer_passage_first() -> None:
    if not (REPO / "models" / "reader-minilm" / "config.json").is_file():
        pytest.skip("models/reader-minilm is not in this checkout")
    ranker = PassageRanker(top_k=1)
    for question, expected in [("who wrote hamlet", "hamlet"), ("what is the highest mountain on earth", "everest")]:
        assert ranker.run(query=question, documents=_documents())["documents"][0].id == expected


def test_retrieval_weight_adds_the_incoming_score(tiny_reader_dir: Path) -> None:
    documents = _documents()
    alone = PassageRanker(model=str(tiny_reader_dir), top_k=len(documents), precision="fp32")
    logits = {d.id: d.score for d in alone.run(query="who wrote hamlet", documents=documents)["documents"]}
    fused = PassageRanker(model=str(tiny_reader_dir), top_k=3, precision="fp32", retrieval_weight=2.0)
    result = fused.run(query="who wrote hamlet", documents=documents)["documents"]
    expected = {d.id: logits[d.id] + 2.0 * d.score for d in documents}
    assert [d.id for d in result] == sorted(expected, key=lambda i: -expected[i])[:3]
    assert [d.score for d in result] == pytest.approx([expected[d.id] for d in result])
    big = PassageRanker(model=str(tiny_reader_dir), top_k=3, precision="fp32", retrieval_weight=1e6)
    assert [d.id for d in big.run(query="who wrote hamlet", documents=documents)["documents"]] == [
        d.id for d in documents[:3]
    ]  # a huge weight keeps the retriever's order
    assert PassageRanker.from_dict(fused.to_dict()).retrieval_weight == 2.0


def test_retrieval_weight_is_checked(tiny_reader_dir: Path) -> None:
    with pytest.raises(ValueError, match="retrieval_weight must be a finite number >= 0"):
        PassageRanker(model=str(tiny_reader_dir), retrieval_weight=-1.0)
    with pytest.raises(TypeError, match="retrieval_weight must be a number"):
        PassageRanker(model=str(tiny_reader_dir), retrieval_weight="1")  # type: ignore[arg-type]
    unscored = [Document(content="Hamlet is a play.")]
    ranker = PassageRanker(model=str(tiny_reader_dir), retrieval_weight=0.5)
    with pytest.raises(ValueError, match="needs each document's retrieval score"):
        ranker.run(query="who wrote hamlet", documents=unscored)


def test_the_bf16_copy_scores_exactly_as_autocast_over_float32_weights(tiny_reader_dir: Path) -> None:
    import torch

    float32_reader, tokenizer = shared_reader(str(tiny_reader_dir))
    bf16_reader, _ = shared_reader(str(tiny_reader_dir), bf16_linear=True)
    assert bf16_reader is not float32_reader
    linear_dtypes = {m.weight.dtype for m in bf16_reader.modules() if isinstance(m, torch.nn.Linear)}
    assert linear_dtypes == {torch.bfloat16}
    assert all(p.dtype == torch.float32 for p in float32_reader.parameters())  # the float32 copy is untouched
    passages = [(d.meta["title"], d.content or "") for d in _documents()]
    prepared = reader_input(tokenizer, "who wrote hamlet", passages, InputSettings())
    assert input_relevance(bf16_reader, prepared, bf16=True) == input_relevance(float32_reader, prepared, bf16=True)
    ranker = PassageRanker(model=str(tiny_reader_dir), precision="bf16")
    ranker.warm_up()
    assert ranker._reader is bf16_reader
