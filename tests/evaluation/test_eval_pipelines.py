"""Evaluation pipelines (pipelines/eval_nq.yml, eval_squad.yml) and ``haystack eval`` as their front end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.evaluation import EvaluationRunResult

from dpr_components.cli.eval_command import default_evaluation_pipeline
from dpr_components.cli.main import main
from dpr_components.evaluation.eval_spec import evaluation_spec, is_evaluation_spec
from dpr_components.evaluation.pipeline_eval import SystemOutputs, evaluate_outputs
from dpr_components.evaluation.questions import QAExample, load_questions
from dpr_components.evaluation.retrieval_metrics import evaluate_retrieval
from dpr_components.pipeline_files.loading import load_pipeline, load_pipeline_spec
from haystack_integrations.components.evaluators.dpr.retrieval_accuracy_evaluator import RetrievalAccuracyEvaluator
from tests.helpers.commands import eval_args
from tests.helpers.paths import PIPELINES, REPO

pytestmark = pytest.mark.usefixtures("one_thread")

QUESTIONS = (
    '{"id": "1", "question": "who wrote hamlet", "answers": ["Shakespeare"]}\n'
    '{"id": "2", "question": "highest mountain on earth", "answers": ["Everest"]}\n'
    '{"id": "3", "question": "what is the capital of atlantis", "answers": ["Poseidonia"]}\n'
)


@pytest.fixture()
def tiny_qa(tiny_st_dir: Path, tiny_reader_dir: Path) -> list[str]:
    """The ``--set`` assignments that run pipelines/qa.yml on the tiny encoder and reader."""
    return [f"hybrid.model={tiny_st_dir}", f"reranker.model={tiny_reader_dir}", f"reader.model={tiny_reader_dir}"]


@pytest.fixture()
def questions_file(tmp_path: Path) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text(QUESTIONS, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "questions"), [("eval_nq.yml", "nq/dev.jsonl"), ("eval_squad.yml", "squad/dev.jsonl")]
)
def test_evaluation_files_load(name: str, questions: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DPR_DATA_DIR", str(tmp_path / "data"))
    spec = load_pipeline_spec(PIPELINES / name)
    assert is_evaluation_spec(spec)
    settings = evaluation_spec(spec, str(PIPELINES / name))
    assert settings.questions == str(tmp_path / "data" / questions)
    assert settings.top_k == 100
    assert all(Path(path).is_file() for path in settings.systems.values())
    assert set(load_pipeline(PIPELINES / name).inputs()) == {"retrieval_accuracy", "answer_exact_match"}


def test_evaluation_section_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown keys"):
        evaluation_spec({"metadata": {"evaluation": {"question": "x"}}}, "e.yml")
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        evaluation_spec({"metadata": {"evaluation": {"top_k": 0}}}, "e.yml")
    with pytest.raises(ValueError, match="systems must map names"):
        evaluation_spec({"metadata": {"evaluation": {"systems": ["bm25.yml"]}}}, "e.yml")
    assert not is_evaluation_spec(load_pipeline_spec(PIPELINES / "bm25.yml"))


def test_scores_equal_the_direct_metric_and_fill_haystack_run_result() -> None:
    questions = [QAExample("a", "q1", ["blue"]), QAExample("b", "q2", ["red"]), QAExample("c", "q3", ["green"])]
    ranked = [
        [Document(content="sky is blue"), Document(content="grass")],
        [Document(content="nothing"), Document(content="red apple")],
        [Document(content="nothing"), Document(content="none")],
    ]
    outputs = SystemOutputs("sys", ranked, ["blue", "Red", None], 0.0)
    evaluation = evaluate_outputs(default_evaluation_pipeline("string"), questions, outputs, top_k=2)
    direct = evaluate_retrieval([q.answers for q in questions], [[d.content for d in docs] for docs in ranked], max_k=2)
    assert evaluation.retrieval is not None
    assert evaluation.retrieval.top_k == direct.top_k and evaluation.retrieval.mrr == pytest.approx(direct.mrr)
    assert isinstance(evaluation.run_result, EvaluationRunResult)
    aggregated = evaluation.run_result.aggregated_report(output_format="json")
    scores = dict(zip(aggregated["metrics"], aggregated["score"], strict=True))
    assert scores["top_1_accuracy"] == pytest.approx(1 / 3) and scores["top_5_accuracy"] == pytest.approx(2 / 3)
    assert scores["exact_match"] == pytest.approx(2 / 3)
    detailed = evaluation.run_result.detailed_report(output_format="json")
    assert detailed["top_1_accuracy"] == [1.0, 0.0, 0.0] and detailed["mrr"] == [1.0, 0.5, 0.0]


def test_a_system_with_nothing_to_score_is_a_clear_error() -> None:
    outputs = SystemOutputs("sys", None, ["x"], 0.0)
    pipeline = default_evaluation_pipeline("string")
    pipeline.remove_component("answer_exact_match")
    with pytest.raises(ValueError, match="no evaluator of the evaluation pipeline takes"):
        evaluate_outputs(pipeline, [QAExample("a", "q", ["x"])], outputs, top_k=5)


def _eval_args(*files: str, store: Path, model: Path, questions: Path, out: Path) -> list[str]:
    return [
        "eval",
        *files,
        "--questions",
        str(questions),
        "--store",
        str(store),
        "--set",
        f"dense.model={model}",
        "--set",
        f"hybrid.model={model}",
        "--set",
        "hybrid.weight=0.001",
        "--top-k",
        "5",
        "--out",
        str(out),
    ]


def test_eval_pipeline_equals_the_systems_given_directly(
    indexed_store: Path, tiny_st_dir: Path, questions_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The evaluation file's own systems, and the same systems named on the command line, give one set of numbers."""
    from_file, direct = tmp_path / "from_file", tmp_path / "direct"
    assert (
        main(
            _eval_args(
                str(PIPELINES / "eval_nq.yml"),
                store=indexed_store,
                model=tiny_st_dir,
                questions=questions_file,
                out=from_file,
            )
        )
        == 0
    )
    systems = [str(PIPELINES / name) for name in ("bm25.yml", "dense.yml", "search.yml")]
    assert main(_eval_args(*systems, store=indexed_store, model=tiny_st_dir, questions=questions_file, out=direct)) == 0
    capsys.readouterr()
    first = json.loads((from_file / "report.json").read_text())["systems"]
    second = json.loads((direct / "report.json").read_text())["systems"]
    assert set(first) == {"bm25", "dense", "hybrid"} and set(second) == {"bm25", "dense", "search"}
    assert first["bm25"]["first_hit_ranks"] == second["bm25"]["first_hit_ranks"] == [1, 1, None]
    assert first["hybrid"]["top_k_accuracy"] == second["search"]["top_k_accuracy"]
    runs = json.loads((from_file / "evaluation_runs.json").read_text())
    assert runs["bm25"]["detailed_report"]["question_id"] == ["1", "2", "3"]
    assert "## Time per question" in (from_file / "report.md").read_text()


def test_eval_of_a_qa_pipeline_reports_exact_match(
    indexed_store: Path, tiny_qa: list[str], questions_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "qa"
    settings = [*(part for model in tiny_qa for part in ("--set", model)), "--top-k", "5"]
    args = eval_args(["eval_nq.yml", "qa.yml"], questions_file, indexed_store, out, *settings)
    assert main(args) == 0
    assert "qa: exact_match" in capsys.readouterr().out
    report = (out / "report.md").read_text()
    assert "## Answers" in report and "| qa |" in report
    assert not (out / "topk_accuracy.png").exists()  # no system returned documents


def test_eval_errors_are_clear(questions_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nq = str(PIPELINES / "eval_nq.yml")
    assert (
        main(
            [
                "eval",
                nq,
                str(PIPELINES / "eval_squad.yml"),
                "--questions",
                str(questions_file),
                "--out",
                str(tmp_path / "a"),
            ]
        )
        == 2
    )
    assert "at most one evaluation pipeline" in capsys.readouterr().err
    assert (
        main(["eval", nq, "--questions", str(questions_file), "--set", "nothing.top_k=3", "--out", str(tmp_path / "b")])
        == 2
    )
    assert "no system has a component 'nothing'" in capsys.readouterr().err
    bare = tmp_path / "bare.yml"
    bare.write_text(
        "components:\n  acc:\n    type: haystack_integrations.components.evaluators.dpr.retrieval_accuracy_evaluator.RetrievalAccuracyEvaluator\n",
        encoding="utf-8",
    )
    assert main(["eval", str(bare), "--questions", str(questions_file), "--out", str(tmp_path / "c")]) == 2
    assert "no systems to evaluate" in capsys.readouterr().err


DOCS_EVALUATION = REPO / "docs" / "evaluation.md"


def _documented_evaluate() -> Any:
    """The ``evaluate`` function of docs/evaluation.md, run as written."""
    text = DOCS_EVALUATION.read_text(encoding="utf-8")
    block = text.split("<!-- evaluation-loop -->", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(block, str(DOCS_EVALUATION), "exec"), namespace)
    return namespace["evaluate"]


def test_evaluation_files_run_as_plain_pipelines() -> None:
    """Retrieval-only, answers-only and both: the evaluators whose input is left out return nothing."""
    for name in ("eval_nq.yml", "eval_squad.yml"):
        pipeline = Pipeline.loads((PIPELINES / name).read_text(encoding="utf-8"))
        golds = [["Shakespeare"], ["Everest"]]
        documents = [[Document(content="by Shakespeare")], [Document(content="K2")]]
        retrieval = pipeline.run({"ground_truth_answers": golds, "retrieved_documents": documents})
        assert set(retrieval) == {"retrieval_accuracy"}
        assert retrieval["retrieval_accuracy"]["top_k_accuracy"][1] == 50.0
        answers = pipeline.run({"ground_truth_answers": golds, "predicted_answers": ["Shakespeare", None]})
        assert set(answers) == {"answer_exact_match"} and answers["answer_exact_match"]["exact_match"] == 50.0
        both = pipeline.run(
            {
                "ground_truth_answers": golds,
                "retrieved_documents": documents,
                "predicted_answers": ["Shakespeare", None],
            }
        )
        assert set(both) == {"retrieval_accuracy", "answer_exact_match"}


def test_documented_python_loop_equals_haystack_eval(
    indexed_store: Path,
    tiny_st_dir: Path,
    tiny_qa: list[str],
    questions_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    evaluate = _documented_evaluate()
    evaluation = Pipeline.loads((PIPELINES / "eval_nq.yml").read_text(encoding="utf-8"))
    overrides = {
        "bm25.yml": [],
        "search.yml": [f"hybrid.model={tiny_st_dir}", "hybrid.weight=0.001"],
        "qa.yml": tiny_qa,
    }
    for name, sets in overrides.items():
        out = tmp_path / name
        args = [
            "eval",
            str(PIPELINES / name),
            "--questions",
            str(questions_file),
            "--store",
            str(indexed_store),
            "--top-k",
            "5",
            "--out",
            str(out),
        ]
        for assignment in sets:
            args += ["--set", assignment]
        assert main(args) == 0
        capsys.readouterr()
        system = load_pipeline(PIPELINES / name, store=str(indexed_store), overrides=sets)
        scores = evaluate(system, evaluation, str(questions_file), top_k=5)
        if name == "qa.yml":
            detailed = json.loads((out / "evaluation_runs.json").read_text())["qa"]["detailed_report"]
            assert set(scores) == {"answer_exact_match"}
            assert scores["answer_exact_match"]["individual_scores"] == detailed["exact_match"]
            assert scores["answer_exact_match"]["individual_f1"] == pytest.approx(detailed["f1"])
        else:
            reported = json.loads((out / "report.json").read_text())["systems"][Path(name).stem]
            accuracy = scores["retrieval_accuracy"]
            assert accuracy["first_hit_ranks"] == reported["first_hit_ranks"]
            assert accuracy["top_k_accuracy"][5] == pytest.approx(reported["top_k_accuracy"]["5"])
            assert accuracy["mrr"] == pytest.approx(reported["mrr"])


def test_gold_passage_matching_counts_passages_of_the_gold_documents() -> None:
    evaluator = RetrievalAccuracyEvaluator(ks=[1, 2])
    ranked = [
        [Document(id="b#0", content="x", meta={"document_id": "b"}), Document(id="a#1", meta={"document_id": "a"})],
        [Document(id="c#0", content="the answer is here", meta={"document_id": "c"})],
        [Document(id="d", content="no meta: its own id is the document")],
    ]
    result = evaluator.run(
        ground_truth_answers=[["zzz"], ["answer"], ["nothing"]],
        retrieved_documents=ranked,
        ground_truth_document_ids=[["a"], ["other"], ["d"]],
    )
    # The answer text in question 2's passage does not count: only the gold documents do.
    assert result["first_hit_ranks"] == [2, None, 1]
    with pytest.raises(ValueError, match=r"ground_truth_document_ids\[1\] must be a non-empty list"):
        evaluator.run(
            ground_truth_answers=[["a"], ["b"]], retrieved_documents=ranked[:2], ground_truth_document_ids=[["a"], []]
        )
    with pytest.raises(ValueError, match="has 1 entries for 2 questions"):
        evaluator.run(
            ground_truth_answers=[["a"], ["b"]], retrieved_documents=ranked[:2], ground_truth_document_ids=[["a"]]
        )


def test_question_files_carry_gold_ids(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "1", "question": "q", "answers": ["a"], "gold_ids": ["doc-1", "doc-2"]}\n')
    assert load_questions(path)[0].gold_ids == ["doc-1", "doc-2"]
    path.write_text('{"id": "1", "question": "q", "answers": ["a"], "gold_ids": "doc-1"}\n')
    with pytest.raises(ValueError, match=r"q.jsonl, line 1: field 'gold_ids': expected a list of document ids"):
        load_questions(path)


def test_eval_by_gold_passages(indexed_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--match gold`` scores by the gold documents and leaves out questions that name none."""
    questions = tmp_path / "selection.jsonl"
    records = [
        {"id": "1", "question": "who wrote hamlet", "answers": ["a long answer span"], "gold_ids": ["hamlet"]},
        {"id": "2", "question": "highest mountain on earth", "answers": ["Everest"], "gold_ids": ["curie"]},
        {"id": "3", "question": "what is the capital of atlantis", "answers": ["Poseidonia"]},
    ]
    questions.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "gold"
    bm25 = str(PIPELINES / "bm25.yml")
    assert (
        main(
            [
                "eval",
                bm25,
                "--questions",
                str(questions),
                "--store",
                str(indexed_store),
                "--match",
                "gold",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    output = capsys.readouterr().out
    assert "1 question(s) without gold_ids left out" in output
    report = json.loads((out / "report.json").read_text())["systems"]["bm25"]
    assert report["first_hit_ranks"][0] == 1  # hamlet's passage is the gold one, whatever the answer text says
    assert len(report["first_hit_ranks"]) == 2 and report["first_hit_ranks"][1] != 1


def test_lambda_fit_by_gold_passages(
    indexed_store: Path, tiny_st_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = tmp_path / "selection.jsonl"
    records = [
        {"id": "1", "question": "who wrote hamlet", "answers": ["not in any passage"], "gold_ids": ["hamlet"]},
        {"id": "2", "question": "highest mountain on earth", "answers": ["Everest"]},
    ]
    questions.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "lambda"
    search = str(PIPELINES / "search.yml")
    arguments = ["fit-lambda", search, "--questions", str(questions), "--store", str(indexed_store)]
    assert main([*arguments, "--set", f"hybrid.model={tiny_st_dir}", "--match", "gold", "--out", str(out)]) == 0
    assert "1 question(s) without gold_ids left out" in capsys.readouterr().out
    curve = json.loads((out / "lambda.json").read_text())["curve"]
    # BM25 alone (λ = 0) ranks the Hamlet passage first; by answer matching nothing would ever hit.
    assert curve[0]["top_k"]["1"] == 100.0


def test_gold_candidates_ignore_the_answer_text() -> None:
    from dpr_components.hybrid_fusion import ScoredUnion
    from dpr_components.rankers.hybrid_fit import collect_candidates

    union = ScoredUnion(["has the answer", "other"], ["a", "gold"], np.array([1.0, 0.5]), np.array([0.0, 0.0]))
    assert collect_candidates(union, ["answer"]).hits.tolist() == [True, False]
    assert collect_candidates(union, ["answer"], gold_ids=["gold"]).hits.tolist() == [False, True]


def test_a_relative_question_file_is_also_looked_up_in_the_data_folder(
    indexed_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    (data / "nq").mkdir(parents=True)
    (data / "nq" / "dev.jsonl").write_text(QUESTIONS)
    monkeypatch.setenv("DPR_DATA_DIR", str(data))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "report"
    bm25 = str(PIPELINES / "bm25.yml")
    assert main(["eval", bm25, "--questions", "nq/dev.jsonl", "--store", str(indexed_store), "--out", str(out)]) == 0
    capsys.readouterr()
    report = json.loads((out / "report.json").read_text())
    assert report["systems"]["bm25"]["first_hit_ranks"] == [1, 1, None]
    assert "Dataset: nq/dev.jsonl (3 questions)" in (out / "report.md").read_text()  # named as given
