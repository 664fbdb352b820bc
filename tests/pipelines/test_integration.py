"""End-to-end with the real bundled MiniLM: the example corpus, and slices of the shared pool (searched, and
adapted to by ``haystack run adapt``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dpr_components.cli.main import main
from dpr_components.encoders.model_layout import resolve_model_path
from dpr_components.evaluation.questions import QAExample, load_questions
from dpr_components.evaluation.retrieval_metrics import first_hit_rank_for
from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.helpers.commands import adapt_args, eval_args, index_args
from tests.helpers.paths import PIPELINES, REPO

pytestmark = pytest.mark.integration


def _index(corpus: Path, store: Path, cache: Path) -> None:
    assert main(index_args(corpus, store, None, cache_dir=cache)) == 0


@pytest.fixture(scope="module")
def example_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("example")
    _index(REPO / "examples" / "corpus.jsonl", root / "index", root / "cache")
    return root / "index"


@pytest.mark.parametrize("pipeline", ["bm25.yml", "dense.yml", "search.yml"])
def test_who_wrote_hamlet(example_store: Path, pipeline: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["run", str(PIPELINES / pipeline), "--store", str(example_store), "-q", "who wrote hamlet", "--json"]) == 0
    )
    documents = next(iter(json.loads(capsys.readouterr().out).values()))["documents"]
    assert documents[0]["meta"]["title"] == "Hamlet"


def test_example_questions_are_answered(example_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    pipelines = ["bm25.yml", "dense.yml", "search.yml"]
    questions = REPO / "examples" / "questions.jsonl"
    assert main(eval_args(pipelines, questions, example_store, out, "--top-k", "20")) == 0
    systems = json.loads((out / "report.json").read_text())["systems"]
    for name in ("bm25", "dense", "search"):
        assert systems[name]["top_k_accuracy"]["5"] >= 80.0, name


def _pool_slice(shared_data: Path, questions: int, others: int, out: Path) -> Path:
    """A corpus file of the pool documents holding the gold passages of the first ``questions`` NQ dev
    questions, and ``others`` other paragraphs of the pool."""
    gold_texts = set()
    with open(shared_data / "nq" / "dev.jsonl", encoding="utf-8") as handle:
        for _, line in zip(range(questions), handle, strict=False):
            gold_texts.update(ctx["text"] for ctx in json.loads(line)["positive_ctxs"])
    documents = []
    with open(shared_data / "wiki" / "documents.jsonl", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record["text"] in gold_texts or (len(documents) < others and record["source"] != "nq-article"):
                documents.append(record)
    out.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    return out


def test_pool_slice_with_nq_gold_passages(shared_data: Path, tmp_path: Path) -> None:
    """300 real pool documents holding the gold passages of 40 NQ dev questions."""
    questions = load_questions(str(shared_data / "nq" / "dev.jsonl"), limit=40)
    _index(_pool_slice(shared_data, 40, 260, tmp_path / "slice.jsonl"), tmp_path / "index", tmp_path / "cache")
    questions_file = tmp_path / "q.jsonl"
    questions_file.write_text("".join(json.dumps(q.__dict__) + "\n" for q in questions), encoding="utf-8")
    out = tmp_path / "report"
    assert main(eval_args(["bm25.yml", "dense.yml"], questions_file, tmp_path / "index", out, "--top-k", "20")) == 0
    systems = json.loads((out / "report.json").read_text())["systems"]
    # Zero-shot MiniLM is strong on NQ (it saw NQ pairs in pre-training); BM25 less so.
    assert systems["dense"]["top_k_accuracy"]["5"] >= 75.0
    assert systems["bm25"]["top_k_accuracy"]["20"] >= 60.0


def _dense_top_5(store: Path, model: str, questions: list[QAExample]) -> float:
    """Answer-matching top-5 accuracy (%) of ``model`` searching ``store`` as it is."""
    retriever = DenseRetriever(document_store=EmbeddedDocumentStore(path=str(store)), model=model, top_k=5)
    retriever.warm_up()
    hits = 0
    for question in questions:
        documents = retriever.run(query=question.question)["documents"]
        hits += first_hit_rank_for(question.answers, [d.content or "" for d in documents]) is not None
    return 100.0 * hits / len(questions)


BERT_PARTS = ("embeddings.", "encoder.layer.")


def _weights_changed(start: Path, trained: Path) -> bool:
    """Whether any BERT tensor of the two model folders differs (the trained one is not the start saved again),
    matched by name past the layout's prefix (``question_encoder.bert_model.`` in the DPR layout)."""
    from safetensors.torch import load_file

    def by_bert_name(path: Path) -> dict[str, Any]:
        tensors = load_file(path / "model.safetensors")
        return {name[name.index(part) :]: tensors[name] for name in tensors for part in BERT_PARTS if part in name}

    before, after = by_bert_name(start), by_bert_name(trained)
    shared = before.keys() & after.keys()
    assert shared, "the two model folders share no tensor name"
    return any(not before[name].equal(after[name]) for name in shared)


def test_adapt_on_a_pool_slice_with_the_real_models(shared_data: Path, tmp_path: Path) -> None:
    """``haystack run adapt`` with the bundled MiniLM and re-ranker on 400 real pool documents: it trains a
    question encoder paired with the store, and that encoder still finds the NQ dev questions' answers."""
    store, out = tmp_path / "index", tmp_path / "adapted"
    _index(_pool_slice(shared_data, 40, 360, tmp_path / "slice.jsonl"), store, tmp_path / "cache")
    minilm = "bundled:all-MiniLM-L6-v2"
    args = adapt_args(store, out, minilm, "bundled:ranker-minilm", "--max-passages", "40")
    assert main([*args, "--set", f"adapter.passage_model={minilm}"]) == 0
    report = json.loads((out / "adaptation.json").read_text(encoding="utf-8"))
    assert report["complete"] and report["scored"] == 40 and report["training"]["complete"]
    adapted = str(out / "question_encoder")
    assert _weights_changed(resolve_model_path(minilm), out / "question_encoder")
    assert DenseRetriever(document_store=EmbeddedDocumentStore(path=str(store)), model=adapted).check_store_pairing()
    questions = load_questions(str(shared_data / "nq" / "dev.jsonl"), limit=40)
    before, after = _dense_top_5(store, minilm, questions), _dense_top_5(store, adapted, questions)
    # Ten small steps move the encoder a little; a broken adaptation (wrong vectors, a diverged loss) loses most.
    assert after >= before - 10.0, (before, after)
    assert after >= 65.0, after


def test_qa_pipeline_with_the_committed_reader(example_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's demo: the committed reader finds the answer spans in the example corpus."""
    reader = REPO / "models" / "reader-minilm"
    if not (reader / "model.safetensors").is_file():
        pytest.fail(f"{reader} is missing: pipelines/qa.yml and the demo need the committed reader")
    questions = [json.loads(line) for line in (REPO / "examples" / "questions.jsonl").read_text().splitlines()]
    batch = example_store.parent / "questions.txt"
    batch.write_text("\n".join(q["question"] for q in questions) + "\n")
    assert main(["run", str(PIPELINES / "qa.yml"), "--store", str(example_store), "--batch", str(batch), "--json"]) == 0
    results = [json.loads(line)["result"] for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert len(results) == len(questions)
    from dpr_components.evaluation.answer_metrics import exact_match

    hits = [
        exact_match(r["reader"]["answers"][0]["data"], q["answers"]) for r, q in zip(results, questions, strict=True)
    ]
    # The committed reader answers 19 of the 25 exactly; a broken reader or pipeline gets few.
    assert sum(hits) >= 0.7 * len(questions), [r["reader"]["answers"][0]["data"] for r in results]
