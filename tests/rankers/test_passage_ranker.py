"""PassageRanker: a reader's selection head re-ranking retrieved passages."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from haystack import Document, Pipeline

from dpr_components.readers.inputs import InputSettings, build_rows, tokenize_passage
from dpr_components.readers.model import shared_reader
from dpr_components.readers.plain_reader import PlainReader
from dpr_components.readers.predict import input_relevance, reader_input, row_logits, row_relevance
from haystack_integrations.components.rankers.dpr.passage_ranker import PassageRanker
from tests.helpers.corpora import SMALL_CORPUS
from tests.helpers.paths import REPO

pytestmark = pytest.mark.usefixtures("one_thread")


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
    assert "haystack_integrations.components.rankers.dpr.passage_ranker.PassageRanker" in text
    rebuilt = Pipeline.loads(text).get_component("ranker")
    assert isinstance(rebuilt, PassageRanker) and rebuilt.to_dict() == ranker.to_dict()
    assert rebuilt.input_settings.max_length == 192 and rebuilt.batch_size == 8


@pytest.mark.integration
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


def _weight_dtypes(reader: Any) -> tuple[set[Any], set[Any]]:
    """The dtypes of a reader's linear weights and of its other weights (torch module or plain reader)."""
    import torch

    if isinstance(reader, PlainReader):
        tensors = reader.named_tensors()
        linear = {n for n in tensors if not n.startswith("embeddings.") and "LayerNorm" not in n}
        return {tensors[n].dtype for n in linear}, {t.dtype for n, t in tensors.items() if n not in linear}
    linear_ids = {id(p) for m in reader.modules() if isinstance(m, torch.nn.Linear) for p in m.parameters()}
    parameters = list(reader.parameters())
    return {p.dtype for p in parameters if id(p) in linear_ids}, {
        p.dtype for p in parameters if id(p) not in linear_ids
    }


@pytest.mark.parametrize("plain", [True, False])
def test_the_bf16_copy_scores_exactly_as_autocast_over_float32_weights(tiny_reader_dir: Path, plain: bool) -> None:
    import torch

    float32_reader, tokenizer = shared_reader(str(tiny_reader_dir), plain=plain)
    bf16_reader, _ = shared_reader(str(tiny_reader_dir), bf16_linear=True, plain=plain)
    assert bf16_reader is not float32_reader and isinstance(bf16_reader, PlainReader) == plain
    assert _weight_dtypes(bf16_reader) == ({torch.bfloat16}, {torch.float32})
    assert _weight_dtypes(float32_reader) == ({torch.float32}, {torch.float32})  # the float32 copy is untouched
    passages = [(d.meta["title"], d.content or "") for d in _documents()]
    prepared = reader_input(tokenizer, "who wrote hamlet", passages, InputSettings())
    assert input_relevance(bf16_reader, prepared, bf16=True) == input_relevance(float32_reader, prepared, bf16=True)
    if plain:
        ranker = PassageRanker(model=str(tiny_reader_dir), precision="bf16")
        ranker.warm_up()
        assert ranker._reader is bf16_reader


def _rows(tokenizer: Any, max_length: int = 128) -> list[Any]:
    texts = ["Short one.", "A much longer passage with many more words than the first one has, " * 6, "Middle length."]
    passages = [(f"T{i}", tokenize_passage(tokenizer, t)) for i, t in enumerate(texts)]
    return build_rows(tokenizer, "what is it", passages, InputSettings(max_length=max_length, stride=16))


@pytest.mark.parametrize("plain", [True, False])
@pytest.mark.parametrize("bf16", [False, True])
def test_the_selection_logit_alone_equals_the_full_forwards(tiny_reader_dir: Path, bf16: bool, plain: bool) -> None:
    reader, tokenizer = shared_reader(str(tiny_reader_dir), bf16_linear=bf16, plain=plain)
    rows = _rows(tokenizer)
    assert len({len(r.input_ids) for r in rows}) > 1  # padded rows and several windows
    full = [relevance for _, _, relevance in row_logits(reader, rows, tokenizer.pad_token_id, 3, bf16)]
    alone = row_relevance(reader, rows, tokenizer.pad_token_id, 3, bf16)
    assert alone == pytest.approx(full, abs=1e-5 if not bf16 else 2e-2)
    if not plain:
        layers = reader.span_predictor.encoder.bert_model.encoder.layer
        assert len(layers) == reader.config.num_hidden_layers  # untouched


@pytest.mark.integration
def test_the_bundled_ranker_orders_as_its_full_forward() -> None:
    reader, tokenizer = shared_reader("bundled:ranker-minilm", bf16_linear=True)
    passages = [(d.meta["title"], d.content or "") for d in _documents()]
    prepared = reader_input(tokenizer, "who wrote hamlet", passages, InputSettings(max_length=192))
    full = [r for _, _, r in row_logits(reader, prepared.rows, prepared.pad_id, None, bf16=True)]
    alone = row_relevance(reader, prepared.rows, prepared.pad_id, None, bf16=True)
    assert alone == pytest.approx(full, abs=0.05)
    assert sorted(range(len(full)), key=lambda i: -full[i]) == sorted(range(len(alone)), key=lambda i: -alone[i])


def test_a_reader_that_is_not_a_dpr_reader_runs_its_full_forward(tiny_reader_dir: Path) -> None:
    import torch

    reader, tokenizer = shared_reader(str(tiny_reader_dir), plain=False)

    class Wrapped(torch.nn.Module):  # like the OpenVINO reader: callable, no DPRReader inside
        def __init__(self) -> None:
            super().__init__()
            self.inner = reader

        def forward(self, **inputs: Any) -> Any:
            return self.inner(**inputs)

    rows = _rows(tokenizer)
    full = [relevance for _, _, relevance in row_logits(reader, rows, tokenizer.pad_token_id, None, False)]
    assert row_relevance(Wrapped(), rows, tokenizer.pad_token_id, None, False) == pytest.approx(full, abs=1e-6)
