"""Evaluate Haystack pipelines with an evaluation pipeline, Haystack's way.

Each system pipeline answers every question; the evaluation pipeline (our evaluator components,
e.g. ``pipelines/eval_nq.yml``) then scores all of a system's outputs in one run, and the scores
become a Haystack ``EvaluationRunResult`` per system. The command line (``haystack eval``) only
parses options, loads the pipelines and calls :func:`evaluate_systems`."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from haystack import Document, Pipeline
from haystack.dataclasses import ExtractedAnswer, GeneratedAnswer
from haystack.evaluation import EvaluationRunResult
from tqdm.auto import tqdm

from dpr_components.evaluation.questions import QAExample
from dpr_components.evaluation.retrieval_metrics import RetrievalResult
from dpr_components.utils.pipeline_graph import leaf_components

RunFunction = Callable[[dict[str, Any]], dict[str, Any]]

RETRIEVAL_INPUT = "retrieved_documents"
ANSWER_INPUT = "predicted_answers"
GOLD_INPUT = "ground_truth_answers"
GOLD_IDS_INPUT = "ground_truth_document_ids"


@dataclass
class SystemOutputs:
    """What one system returned for each question: ranked documents and/or its best answer."""

    name: str
    documents: list[list[Document]] | None
    answers: list[str | None] | None
    seconds_per_question: float


@dataclass
class SystemEvaluation:
    """One system's scores: Haystack's run result plus the full retrieval curve for our report."""

    name: str
    run_result: EvaluationRunResult
    retrieval: RetrievalResult | None
    answer_scores: dict[str, float] = field(default_factory=dict)
    seconds_per_question: float = 0.0


def _leaf_output(pipeline: Any, result: dict[str, Any], socket: str) -> list[Any] | None:
    for name in leaf_components(pipeline):
        value = result.get(name, {}).get(socket)
        if isinstance(value, list):
            return value
    return None


def _best_answer(answers: list[Any]) -> str | None:
    """The text of the top answer; ``None`` when "no answer" (an answer without text, as readers with
    ``no_answer`` return it) comes first: the pipeline did not answer, which scores as wrong."""
    for answer in answers:
        if isinstance(answer, (ExtractedAnswer, GeneratedAnswer)):
            return answer.data or None
        if isinstance(answer, str) and answer.strip():
            return answer
    return None


def run_system(
    name: str, pipeline: Any, questions: Sequence[QAExample], inputs: Mapping[str, Any], run: RunFunction, top_k: int
) -> SystemOutputs:
    """Ask ``pipeline`` every question (``run`` gets ``{"query": ..., **inputs}``); keep its top ``top_k`` documents
    and best answer. A system with neither a ``documents`` nor an ``answers`` output is an error."""
    documents: list[list[Document]] = []
    answers: list[str | None] = []
    has_documents = has_answers = True
    start = time.perf_counter()
    for example in tqdm(questions, desc=f"Evaluating {name}", unit="question"):
        try:
            result = run({"query": example.question, **inputs})
        except ValueError as error:
            raise ValueError(f"question {example.id!r} ({name}): {' '.join(str(error).split())}") from None
        found_documents = _leaf_output(pipeline, result, "documents")
        found_answers = _leaf_output(pipeline, result, "answers")
        has_documents = has_documents and found_documents is not None
        has_answers = has_answers and found_answers is not None
        if not (has_documents or has_answers):
            raise ValueError(f"{name}: the pipeline returned neither 'documents' nor 'answers' to evaluate")
        documents.append((found_documents or [])[:top_k])
        answers.append(_best_answer(found_answers or []))
    seconds = (time.perf_counter() - start) / max(len(questions), 1)
    return SystemOutputs(name, documents if has_documents else None, answers if has_answers else None, seconds)


def evaluator_inputs(eval_pipeline: Pipeline) -> dict[str, set[str]]:
    """The inputs each evaluator of the evaluation pipeline takes."""
    return {name: set(sockets) for name, sockets in eval_pipeline.inputs().items()}


def _applicable(eval_pipeline: Pipeline, outputs: SystemOutputs) -> dict[str, dict[str, Any]]:
    """Inputs for each evaluator the system can feed: retrieval evaluators need documents, answer ones answers."""
    provided = {RETRIEVAL_INPUT: outputs.documents, ANSWER_INPUT: outputs.answers}
    chosen: dict[str, dict[str, Any]] = {}
    for component, sockets in evaluator_inputs(eval_pipeline).items():
        needed = sockets & provided.keys()
        if needed and all(provided[socket] is not None for socket in needed):
            chosen[component] = {socket: provided[socket] for socket in needed}
    return chosen


def _sub_pipeline(eval_pipeline: Pipeline, names: set[str]) -> Pipeline:
    """The evaluation pipeline restricted to ``names`` (evaluators are independent of each other)."""
    data = eval_pipeline.to_dict()
    data["components"] = {name: spec for name, spec in data["components"].items() if name in names}
    data["connections"] = [
        c
        for c in data.get("connections", [])
        if c["sender"].split(".")[0] in names and c["receiver"].split(".")[0] in names
    ]
    # Only classes this pipeline was already built from (checked when it was loaded) are rebuilt.
    modules = sorted({spec["type"].rsplit(".", 1)[0] for spec in data["components"].values()})
    return Pipeline.from_dict(data, allowed_modules=modules)


def _metric_rows(component: str, outputs: dict[str, Any], n_questions: int) -> dict[str, dict[str, Any]]:
    """Haystack metrics (score + individual_scores) from one evaluator's outputs."""
    metrics: dict[str, dict[str, Any]] = {}
    ranks = outputs.get("first_hit_ranks")
    if isinstance(ranks, list) and isinstance(outputs.get("top_k_accuracy"), dict):
        for k, percent in sorted(outputs["top_k_accuracy"].items()):
            hits = [1.0 if rank is not None and rank <= k else 0.0 for rank in ranks]
            metrics[f"top_{k}_accuracy"] = {"score": percent / 100.0, "individual_scores": hits}
        metrics["mrr"] = {
            "score": outputs["mrr"],
            "individual_scores": [1.0 / rank if rank is not None else 0.0 for rank in ranks],
        }
        return metrics
    if "exact_match" in outputs:
        metrics["exact_match"] = {
            "score": outputs["exact_match"] / 100.0,
            "individual_scores": outputs["individual_scores"],
        }
        metrics["f1"] = {"score": outputs["f1"] / 100.0, "individual_scores": outputs["individual_f1"]}
        return metrics
    if isinstance(outputs.get("individual_scores"), list) and len(outputs["individual_scores"]) == n_questions:
        metrics[component] = {"score": outputs["score"], "individual_scores": outputs["individual_scores"]}
    return metrics


def evaluate_outputs(
    eval_pipeline: Pipeline,
    questions: Sequence[QAExample],
    outputs: SystemOutputs,
    top_k: int,
    gold_documents: bool = False,
) -> SystemEvaluation:
    """Run the evaluators that apply to ``outputs`` once over all questions; with ``gold_documents``,
    retrieval evaluators that take ``ground_truth_document_ids`` get each question's ``gold_ids``."""
    chosen = _applicable(eval_pipeline, outputs)
    if not chosen:
        raise ValueError(
            f"{outputs.name}: no evaluator of the evaluation pipeline takes what this system returns "
            f"(evaluators: {sorted(evaluator_inputs(eval_pipeline))})"
        )
    golds = [example.answers for example in questions]
    data = {component: {GOLD_INPUT: golds, **values} for component, values in chosen.items()}
    if gold_documents:
        _add_gold_ids(eval_pipeline, data, questions)
    results = _sub_pipeline(eval_pipeline, set(chosen)).run(data)
    metrics: dict[str, dict[str, Any]] = {}
    retrieval: RetrievalResult | None = None
    answer_scores: dict[str, float] = {}
    for component, component_outputs in results.items():
        metrics.update(_metric_rows(component, component_outputs, len(questions)))
        if isinstance(component_outputs.get("first_hit_ranks"), list) and retrieval is None:
            retrieval = RetrievalResult.from_ranks(
                component_outputs["first_hit_ranks"], max_k=top_k, question_ids=[q.id for q in questions]
            )
        if "exact_match" in component_outputs:
            answer_scores = {"exact_match": component_outputs["exact_match"], "f1": component_outputs["f1"]}
    inputs: dict[str, list[Any]] = {
        "question_id": [q.id for q in questions],
        "question": [q.question for q in questions],
        GOLD_INPUT: golds,
    }
    if outputs.answers is not None:
        inputs[ANSWER_INPUT] = list(outputs.answers)
    run_result = EvaluationRunResult(run_name=outputs.name, inputs=inputs, results=metrics)
    return SystemEvaluation(outputs.name, run_result, retrieval, answer_scores, outputs.seconds_per_question)


def _add_gold_ids(eval_pipeline: Pipeline, data: dict[str, dict[str, Any]], questions: Sequence[QAExample]) -> None:
    """Give each chosen retrieval evaluator the questions' gold document ids (all questions must have some)."""
    missing = [q.id for q in questions if not q.gold_ids]
    if missing:
        raise ValueError(f"gold-passage matching: {len(missing)} question(s) have no gold_ids, e.g. {missing[0]!r}")
    takers = [name for name, sockets in evaluator_inputs(eval_pipeline).items() if GOLD_IDS_INPUT in sockets]
    if not any(name in data and RETRIEVAL_INPUT in data[name] for name in takers):
        raise ValueError(f"gold-passage matching: no retrieval evaluator takes {GOLD_IDS_INPUT}")
    for name in takers:
        if name in data and RETRIEVAL_INPUT in data[name]:
            data[name][GOLD_IDS_INPUT] = [list(q.gold_ids) for q in questions]


def with_gold_ids(questions: Sequence[QAExample], report: Callable[[str], None] = print) -> list[QAExample]:
    """The questions that name their gold documents, ``report`` told how many were left out; an error
    when none does."""
    kept = [q for q in questions if q.gold_ids]
    if not kept:
        raise ValueError("gold-passage matching needs questions with gold_ids (e.g. the selection splits' files)")
    if len(kept) < len(questions):
        report(f"gold-passage matching: {len(questions) - len(kept)} question(s) without gold_ids left out")
    return kept


def evaluate_systems(
    systems: Mapping[str, tuple[Any, RunFunction]],
    eval_pipeline: Pipeline,
    questions: Sequence[QAExample],
    top_k: int,
    inputs_for: Callable[[Any], Mapping[str, Any]] = lambda _pipeline: {},
    on_result: Callable[[SystemEvaluation], None] = lambda _evaluation: None,
    gold_documents: bool = False,
) -> list[SystemEvaluation]:
    """Every system (name → (pipeline, run function)) over ``questions``, scored by ``eval_pipeline``
    (by gold-passage hits with ``gold_documents``)."""
    if not questions:
        raise ValueError("no questions to evaluate")
    evaluations = []
    for name, (pipeline, run) in systems.items():
        outputs = run_system(name, pipeline, questions, inputs_for(pipeline), run, top_k)
        evaluation = evaluate_outputs(eval_pipeline, questions, outputs, top_k, gold_documents)
        on_result(evaluation)
        evaluations.append(evaluation)
    return evaluations
