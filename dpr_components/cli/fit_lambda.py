"""``haystack fit-lambda``: fit λ of a pipeline's exact hybrid (HybridRetriever or HybridRanker) on dev questions."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from dpr_components.evaluation.answer_matching import MatchMode
from dpr_components.evaluation.figures import new_figure, save_png
from dpr_components.evaluation.pipeline_eval import with_gold_ids
from dpr_components.evaluation.questions import load_questions
from dpr_components.hybrid_fusion import ScoredUnion
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.pipeline_requests.running import run_pipeline
from dpr_components.rankers.hybrid_fit import (
    best_weight,
    collect_candidates,
    lambda_curve,
    union_from_lists,
)
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.extras import PLOTS, is_installed, missing_extra_message
from dpr_components.utils.output_files import (
    prepare_output_folder,
    reporting_write_errors,
)
from haystack_integrations.components.rankers.dpr.hybrid_ranker import HybridRanker
from haystack_integrations.components.retrievers.dpr.hybrid_retriever import HybridRetriever

logger = logging.getLogger(__name__)


def write_lambda_report(
    out_dir: str | Path, curve: list[dict[str, Any]], best: float, objective_ks: Sequence[int], command: str, n: int
) -> None:
    """``lambda.md`` (best λ and the curve), ``lambda.json`` and ``lambda.png`` (the plot only with matplotlib
    installed, the ``plots`` extra; a warning says when it is left out)."""
    out = prepare_output_folder(out_dir, "report folder")
    ks = sorted(curve[0]["top_k"])
    lines = [
        "# Hybrid weight λ (BM25 + λ·sim)",
        "",
        f"Best λ = **{best:g}** (maximises the mean of top-{', top-'.join(map(str, objective_ks))} accuracy) "
        f"on {n} questions.",
        "",
        f"Command: `{command}`",
        "",
        "| λ | " + " | ".join(f"top-{k}" for k in ks) + " |",
        "|---|" + "---|" * len(ks),
    ]
    lines += [f"| {p['weight']:g} | " + " | ".join(f"{p['top_k'][k]:.1f}" for k in ks) + " |" for p in curve]
    with reporting_write_errors(out / "lambda.md"):
        atomic_write_text(out / "lambda.md", "\n".join(lines) + "\n")
    summary = {"best": best, "objective_ks": list(objective_ks), "curve": curve}
    with reporting_write_errors(out / "lambda.json"):
        atomic_write_text(out / "lambda.json", json.dumps(summary, indent=1, allow_nan=False))
    _plot_lambda(out / "lambda.png", curve, best, ks)


def _plot_lambda(path: Path, curve: list[dict[str, Any]], best: float, ks: Sequence[int]) -> None:
    """Top-k accuracy against λ at ``path``; without matplotlib (the ``plots`` extra) a warning instead."""
    if not is_installed(PLOTS):
        logger.warning(missing_extra_message(PLOTS, f"{path.name} was not written: the plot"))
        return
    figure = new_figure((7, 4))
    axis = figure.add_subplot()
    positive = [p for p in curve if p["weight"] > 0]
    for k in ks:
        axis.plot([p["weight"] for p in positive], [p["top_k"][k] for p in positive], label=f"top-{k}")
    axis.axvline(best, color="grey", linestyle="--", linewidth=1)
    axis.set_xscale("log")
    axis.set_xlabel("λ")
    axis.set_ylabel("top-k accuracy (%)")
    axis.legend()
    figure.tight_layout()
    with reporting_write_errors(path):
        save_png(figure, path, dpi=110)


def _union_scorer(pipeline: Any) -> Callable[[str], ScoredUnion]:
    """For a question, the union the pipeline's exact hybrid fuses, scored both ways: from its
    HybridRetriever, or from the HybridRanker (mode dpr) and the two retrievers feeding it."""
    for name, instance in pipeline.walk():
        if isinstance(instance, HybridRetriever):
            instance.warm_up()
            return instance.union_scores
        if isinstance(instance, HybridRanker):
            if instance.mode != "dpr":
                raise ValueError("fit-lambda tunes HybridRanker mode 'dpr'")
            senders = {}
            for sender, receiver, data in pipeline.graph.edges(data=True):
                if receiver == name:
                    senders[data["to_socket"].name] = sender
            if "bm25_documents" not in senders or "dense_documents" not in senders:
                raise ValueError(f"HybridRanker {name!r} needs both bm25_documents and dense_documents connected")
            bm25, dense = senders["bm25_documents"], senders["dense_documents"]
            return functools.partial(_union_from_pipeline, pipeline, instance, bm25=bm25, dense=dense)
    raise ValueError("the pipeline has no HybridRetriever or HybridRanker")


def _union_from_pipeline(pipeline: Any, ranker: HybridRanker, question: str, bm25: str, dense: str) -> ScoredUnion:
    result = run_pipeline_with_outputs(pipeline, question, {bm25, dense})
    return union_from_lists(
        ranker.scoring_backend,
        question,
        result[dense]["query_embedding"],
        result[bm25]["documents"],
        result[dense]["documents"],
    )


def command_fit_lambda(args: Any) -> int:
    """``haystack fit-lambda``: score the candidates once, sweep λ, write the report."""
    objective_ks = parse_objective(args.objective)
    prepare_output_folder(args.out)
    pipeline = load_pipeline(args.pipeline, args.store, args.overrides, args.allow_network, require_stores=True)
    union_scores = _union_scorer(pipeline)
    questions = load_questions(args.questions, split=args.split, limit=args.limit)
    gold = args.match == "gold"
    if gold:
        questions = with_gold_ids(questions)
    candidates = []
    for example in tqdm(questions, desc="Scoring candidates", unit="question"):
        try:
            union = union_scores(example.question)
        except ValueError as error:
            raise ValueError(f"question {example.id!r}: {' '.join(str(error).split())}") from None
        match: MatchMode = "string" if gold else args.match
        candidates.append(collect_candidates(union, example.answers, match, example.gold_ids if gold else ()))
    curve = lambda_curve(candidates, ks=sorted({1, 5, 20, 100, *objective_ks}))
    best = best_weight(curve, objective_ks)
    command = args.command_line
    write_lambda_report(args.out, curve, best, objective_ks, command, len(candidates))
    print(f"best λ = {best:g}; report in {args.out}/lambda.md (set it with --set <component>.weight={best:g})")
    return 0


def parse_objective(text: str) -> list[int]:
    """``--objective 1,5,20``: the positive k values whose mean top-k accuracy is maximised."""
    try:
        ks = [int(k) for k in str(text).split(",")]
    except ValueError:
        ks = []
    if not ks or any(k <= 0 for k in ks):
        raise ValueError(f"--objective expects comma-separated positive integers such as 1,5,20, got {text!r}")
    return ks


def run_pipeline_with_outputs(pipeline: Any, query: str, names: set[str]) -> dict[str, Any]:
    """Run ``query`` keeping the outputs of the components ``names`` too."""
    return run_pipeline(pipeline, {"query": query}, include_outputs_from=names)
