"""End-to-end with the real bundled MiniLM: the example corpus, and a slice of the shared pool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpr_components.cli.main import main
from dpr_components.evaluation.questions import load_questions
from tests.helpers.commands import eval_args, index_args
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


def test_pool_slice_with_nq_gold_passages(shared_data: Path, tmp_path: Path) -> None:
    """300 real pool documents holding the gold passages of 40 NQ dev questions."""
    questions = load_questions(str(shared_data / "nq" / "dev.jsonl"), limit=40)
    gold_texts = set()
    with open(shared_data / "nq" / "dev.jsonl", encoding="utf-8") as handle:
        for _, line in zip(range(40), handle, strict=False):
            gold_texts.update(ctx["text"] for ctx in json.loads(line)["positive_ctxs"])
    documents = []
    with open(shared_data / "wiki" / "documents.jsonl", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record["text"] in gold_texts or (len(documents) < 260 and record["source"] != "nq-article"):
                documents.append(record)
    corpus = tmp_path / "slice.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    _index(corpus, tmp_path / "index", tmp_path / "cache")
    questions_file = tmp_path / "q.jsonl"
    questions_file.write_text("".join(json.dumps(q.__dict__) + "\n" for q in questions), encoding="utf-8")
    out = tmp_path / "report"
    assert main(eval_args(["bm25.yml", "dense.yml"], questions_file, tmp_path / "index", out, "--top-k", "20")) == 0
    systems = json.loads((out / "report.json").read_text())["systems"]
    # Zero-shot MiniLM is strong on NQ (it saw NQ pairs in pre-training); BM25 less so.
    assert systems["dense"]["top_k_accuracy"]["5"] >= 75.0
    assert systems["bm25"]["top_k_accuracy"]["20"] >= 60.0


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
