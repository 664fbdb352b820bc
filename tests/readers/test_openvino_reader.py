"""The ``openvino`` back end of the reading components: the same logits, answers and order as torch."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from haystack_integrations.components.rankers.dpr.passage_ranker import PassageRanker
from haystack_integrations.components.readers.dpr.span_reader import SpanReader
from tests.helpers.paths import REPO

pytest.importorskip("openvino")

PASSAGES = [
    Document(content="Hamlet is a tragedy written by William Shakespeare around 1600.", meta={"title": "Hamlet"}),
    Document(content="Paris is the capital and most populous city of France.", meta={"title": "Paris"}),
    Document(content="Mount Everest is Earth's highest mountain above sea level.", meta={"title": "Everest"}),
]


def test_openvino_ranker_fp32_gives_torch_scores(tiny_reader_dir: Path) -> None:
    scores = {}
    for backend in ("torch", "openvino"):
        ranker = PassageRanker(model=str(tiny_reader_dir), precision="fp32", backend=backend, top_k=3)  # type: ignore[arg-type]
        ranked = ranker.run(query="who wrote hamlet", documents=PASSAGES)["documents"]
        scores[backend] = {d.id: d.score for d in ranked}
    assert ranker._reader._selection is not None  # OpenVINO ranks with its selection-only model
    assert scores["openvino"].keys() == scores["torch"].keys()
    for key, value in scores["torch"].items():
        assert scores["openvino"][key] == pytest.approx(value, abs=1e-4)


def test_openvino_span_reader_fp32_gives_torch_answers(tiny_reader_dir: Path) -> None:
    answers = {}
    for backend in ("torch", "openvino"):
        reader = SpanReader(model=str(tiny_reader_dir), precision="fp32", backend=backend, top_k=3)  # type: ignore[arg-type]
        answers[backend] = reader.run(query="who wrote hamlet", documents=PASSAGES)["answers"]
    assert [a.data for a in answers["openvino"]] == [a.data for a in answers["torch"]]
    np.testing.assert_allclose(
        [a.score for a in answers["openvino"]], [a.score for a in answers["torch"]], rtol=1e-3, atol=1e-6
    )


@pytest.mark.parametrize("component", [SpanReader, PassageRanker])
def test_backend_round_trips_and_is_checked(tiny_reader_dir: Path, component: type) -> None:
    data = component(model=str(tiny_reader_dir), backend="openvino").to_dict()
    assert data["init_parameters"]["backend"] == "openvino"
    assert component.from_dict(data).backend == "openvino"
    assert component(model=str(tiny_reader_dir)).to_dict()["init_parameters"]["backend"] == "torch"
    with pytest.raises(ValueError, match="backend must be torch or openvino, got 'onnx'"):
        component(model=str(tiny_reader_dir), backend="onnx")


def test_openvino_ranker_async_equals_sync_also_concurrently(tiny_reader_dir: Path) -> None:
    ranker = PassageRanker(model=str(tiny_reader_dir), backend="openvino", top_k=3)
    queries = ["capital of france", "who wrote hamlet", "highest mountain", "a tragedy"]
    sync = [[d.id for d in ranker.run(query=q, documents=PASSAGES)["documents"]] for q in queries]

    async def all_at_once() -> list[dict]:
        return await asyncio.gather(*(ranker.run_async(query=q, documents=PASSAGES) for q in queries))

    concurrent = [[d.id for d in result["documents"]] for result in asyncio.run(all_at_once())]
    assert concurrent == sync


@pytest.mark.integration
def test_bundled_ranker_on_openvino_keeps_the_order() -> None:
    """The kept setting (precision auto: bf16 where the CPU has it) orders the example corpus's passages as torch
    fp32 does, with logits within 0.1: of torch's top 5, every two passages whose logits differ by more than
    that keep their order (closer ones may swap with bf16 rounding, which differs between CPUs)."""
    with open(REPO / "examples" / "corpus.jsonl", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle][:20]
    documents = [Document(content=r["text"], meta={"title": r.get("title")}) for r in records]
    logits = {}
    for backend, precision in (("torch", "fp32"), ("openvino", "auto")):
        ranker = PassageRanker(precision=precision, backend=backend, top_k=20, max_length=192)  # type: ignore[arg-type]
        ranked = ranker.run(query="what is the capital of france", documents=documents)["documents"]
        logits[backend] = {d.id: d.score for d in ranked}
    ids = list(logits["torch"])
    difference = np.abs(np.array([logits["openvino"][i] for i in ids]) - np.array([logits["torch"][i] for i in ids]))
    assert difference.max() < 0.1, difference.max()
    top = ids[:5]
    for better, worse in itertools.combinations(top, 2):
        if logits["torch"][better] - logits["torch"][worse] > 0.1:
            assert logits["openvino"][better] > logits["openvino"][worse], (better, worse, logits)
    assert set(list(logits["openvino"])[:5]) <= set(ids[:6])  # the same passages on top, but for a near tie at 5


def test_the_accuracy_check_pipeline_is_search_rerank_on_openvino() -> None:
    """docs/training/selection/rerank-openvino's pipeline differs from pipelines/search_rerank.yml only in the
    ranker's back end, so its report measures the back end alone."""
    import yaml

    shipped = yaml.safe_load((REPO / "pipelines" / "search_rerank.yml").read_text(encoding="utf-8"))
    variant_file = REPO / "docs" / "training" / "selection" / "rerank-openvino" / "search_rerank_openvino.yml"
    variant = yaml.safe_load(variant_file.read_text(encoding="utf-8"))
    assert variant["components"]["reranker"]["init_parameters"].pop("backend") == "openvino"
    assert variant == shipped
