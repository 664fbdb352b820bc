"""``haystack eval``: a front end to evaluation pipelines (``pipelines/eval_nq.yml``).

It picks the evaluation pipeline (a file whose components are all evaluators, else the default
one), the systems (files given on the command line, else the evaluation file's
``metadata.evaluation.systems``) and the questions, then calls
:func:`dpr_components.evaluation.pipeline_eval.evaluate_systems` and writes the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from haystack import Pipeline

from dpr_components.evaluation.answer_matching import MatchMode, check_answer_pattern
from dpr_components.evaluation.eval_report import write_evaluation_report
from dpr_components.evaluation.eval_spec import (
    EvaluationSpec,
    evaluation_spec,
    is_evaluation_spec,
)
from dpr_components.evaluation.interval_options import interval_options
from dpr_components.evaluation.intervals import check_question_count
from dpr_components.evaluation.metric_intervals import IntervalSettings
from dpr_components.evaluation.pipeline_eval import SystemEvaluation, evaluate_systems, with_gold_ids
from dpr_components.evaluation.questions import QAExample, load_questions
from dpr_components.pipeline_files.loading import load_pipeline, load_pipeline_spec
from dpr_components.pipeline_requests.inputs import request_inputs
from dpr_components.pipeline_requests.running import run_pipeline
from dpr_components.utils.output_files import prepare_output_folder
from dpr_components.utils.sources import resolve_data_source
from haystack_integrations.components.evaluators.dpr.answer_exact_match_f1_evaluator import AnswerExactMatchF1Evaluator
from haystack_integrations.components.evaluators.dpr.retrieval_accuracy_evaluator import RetrievalAccuracyEvaluator

DEFAULT_TOP_K = 100


def check_top_k_option(top_k: int) -> int:
    """The passages per question (``--top-k``, else the evaluation file's) when positive."""
    if top_k <= 0:
        raise ValueError(f"--top-k must be positive, got {top_k}")
    return top_k


def default_evaluation_pipeline(match_mode: MatchMode) -> Pipeline:
    """Our evaluators with the paper's ks, used when no evaluation file is given."""
    pipeline = Pipeline()
    pipeline.add_component("retrieval_accuracy", RetrievalAccuracyEvaluator(ks=(1, 5, 20, 100), match_mode=match_mode))
    pipeline.add_component("answer_exact_match", AnswerExactMatchF1Evaluator())
    return pipeline


def _split_files(paths: list[str]) -> tuple[str | None, list[str]]:
    """The evaluation pipeline among the positional files (at most one) and the system pipelines."""
    evaluation = [path for path in paths if is_evaluation_spec(load_pipeline_spec(path))]
    if len(evaluation) > 1:
        raise ValueError(f"give at most one evaluation pipeline, got {evaluation}")
    return (evaluation[0] if evaluation else None), [path for path in paths if path not in evaluation]


def _evaluation_pipeline(
    path: str | None, match: MatchMode | None, allow_network: bool
) -> tuple[Pipeline, EvaluationSpec]:
    if path is None:
        return default_evaluation_pipeline(match or "string"), EvaluationSpec()
    overrides = []
    if match is not None:
        spec = load_pipeline_spec(path)
        overrides = [
            f"{name}.match_mode={match}"
            for name, data in spec["components"].items()
            if data["type"].endswith("RetrievalAccuracyEvaluator")
        ]
    pipeline = load_pipeline(path, overrides=overrides, allow_network=allow_network)
    return pipeline, evaluation_spec(load_pipeline_spec(path), path)


def _check_patterns(eval_pipeline: Pipeline, questions: list[QAExample], source: str) -> None:
    """In ``regex`` mode, every answer must compile: found now, not after every system has run."""
    regex_mode = any(getattr(instance, "match_mode", None) == "regex" for _, instance in eval_pipeline.walk())
    for question in questions if regex_mode else []:
        for answer in question.answers:
            try:
                check_answer_pattern(answer)
            except ValueError as error:
                raise ValueError(f"{source}: question {question.id!r}: {error}") from None


def _system_names(paths: list[str], named: dict[str, str]) -> dict[str, str]:
    if not paths:
        return named
    names: dict[str, str] = {}
    for path in paths:
        names[path if Path(path).stem in names else Path(path).stem] = path
    return names


def _overrides_for(systems: dict[str, str], overrides: list[str]) -> dict[str, list[str]]:
    """Each ``--set component.param=value`` goes to the systems that have that component (at least one must)."""
    components = {name: set(load_pipeline_spec(path)["components"]) for name, path in systems.items()}
    chosen: dict[str, list[str]] = {name: [] for name in systems}
    for assignment in overrides:
        component = assignment.split("=", 1)[0].split(".", 1)[0]
        receivers = [name for name, names in components.items() if component in names]
        if not receivers:
            raise ValueError(f"--set {assignment.split('=', 1)[0]}: no system has a component {component!r}")
        for name in receivers:
            chosen[name].append(assignment)
    return chosen


def _print_scores(evaluation: SystemEvaluation) -> None:
    parts = []
    if evaluation.retrieval is not None:
        parts += [
            f"top-{k} {evaluation.retrieval.accuracy(k):.1f}"
            for k in (1, 5, 20, 100)
            if k <= evaluation.retrieval.max_k
        ]
    parts += [f"{metric} {value:.1f}" for metric, value in evaluation.answer_scores.items()]
    print(f"{evaluation.name}: " + "  ".join(parts), flush=True)


def command_eval(args: Any) -> int:
    """``haystack eval``: every system on the question set, scored by the evaluation pipeline."""
    options = interval_options(args)
    intervals = IntervalSettings(**options) if options is not None else None  # checked before any system runs
    prepare_output_folder(args.out)
    eval_path, system_paths = _split_files(args.pipelines)
    gold_documents = args.match == "gold"
    eval_pipeline, spec = _evaluation_pipeline(eval_path, None if gold_documents else args.match, args.allow_network)
    systems = _system_names(system_paths, spec.systems)
    if not systems:
        raise ValueError(
            f"{eval_path}: no systems to evaluate; give pipeline files or list them in metadata.evaluation.systems"
        )
    questions_source = args.questions or spec.questions
    if not questions_source:
        raise ValueError(
            "no questions: give --questions or set metadata.evaluation.questions in the evaluation pipeline"
        )
    top_k = check_top_k_option(next(k for k in (args.top_k, spec.top_k, DEFAULT_TOP_K) if k is not None))
    # A relative name missing here is looked up in the shared data folder, as training data is.
    questions = load_questions(resolve_data_source(questions_source), split=args.split or spec.split, limit=args.limit)
    if gold_documents:
        questions = with_gold_ids(questions)
    if intervals is not None:  # refused before any system runs
        check_question_count(len(questions), "--intervals")
    _check_patterns(eval_pipeline, questions, str(questions_source))
    overrides = _overrides_for(systems, args.overrides)
    loaded = {
        name: load_pipeline(path, args.store, overrides[name], args.allow_network, require_stores=True)
        for name, path in systems.items()
    }
    runners = {name: (pipeline, lambda data, p=pipeline: run_pipeline(p, data)) for name, pipeline in loaded.items()}
    evaluations = evaluate_systems(
        runners,
        eval_pipeline,
        questions,
        top_k,
        inputs_for=lambda pipeline: request_inputs(pipeline, top_k=top_k),
        on_result=_print_scores,
        gold_documents=gold_documents,
    )
    paths = write_evaluation_report(
        args.out,
        evaluations,
        title=f"Evaluation on {Path(str(questions_source)).name}" + (" (gold-passage hits)" if gold_documents else ""),
        command=args.command_line,
        dataset_name=str(questions_source),
        intervals=intervals,
    )
    print(f"report written to {paths['markdown']}")
    return 0
