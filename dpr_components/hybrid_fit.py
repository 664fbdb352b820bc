"""Fit λ of the DPR hybrid (BM25 + λ·sim) on dev questions and report the curve.

For each question the union of both retrievers' top-N is scored once both ways; every λ of
the grid then only re-sorts those arrays, so a fine grid costs little."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document
from tqdm.auto import tqdm

from dpr_components.evaluation.retrieval_metrics import answer_hits, top_k_accuracy_from_ranks
from dpr_components.io_utils import atomic_path, atomic_write_text
from dpr_components.output_files import prepare_output_folder, reporting_write_errors

DEFAULT_GRID = tuple([0.0] + [float(x) for x in np.round(np.logspace(-2, 3, 51), 4)])


@dataclass
class Candidates:
    """One question's union of candidates: BM25 score, dense score and answer hit of each."""

    bm25: np.ndarray
    dense: np.ndarray
    hits: np.ndarray


def collect_candidates(
    backend: Any,
    query: str,
    query_embedding: Sequence[float],
    bm25_documents: list[Document],
    dense_documents: list[Document],
    answers: Sequence[str],
    match_mode: str = "string",
) -> Candidates:
    """Score the union of both lists exactly (as HybridRanker mode ``dpr`` does) and mark answer hits."""
    by_id: dict[str, Document] = {}
    for doc in [*dense_documents, *bm25_documents]:
        by_id.setdefault(doc.id, doc)
    ids = list(by_id)
    scores = backend.score_documents(ids, query, query_embedding)
    ids = [i for i in ids if i in scores]
    bm25 = np.array([scores[i][0] or 0.0 for i in ids], dtype=np.float64)
    dense = np.array([scores[i][1] or 0.0 for i in ids], dtype=np.float64)
    hits = np.array(answer_hits(answers, [by_id[i].content or "" for i in ids], match_mode), dtype=bool)
    return Candidates(bm25=bm25, dense=dense, hits=hits)


def first_hit_rank(candidates: Candidates, weight: float, max_k: int = 100) -> int | None:
    """1-based rank of the first answer-bearing passage under BM25 + weight·sim, or None within max_k."""
    if not candidates.hits.any():
        return None
    fused = candidates.bm25 + weight * candidates.dense
    best_hit = fused[candidates.hits].max()
    # Ties are broken against the hit, so a reported accuracy is never optimistic.
    rank = int((fused > best_hit).sum() + (fused[~candidates.hits] == best_hit).sum() + 1)
    return rank if rank <= max_k else None


def lambda_curve(
    questions: Sequence[Candidates], weights: Sequence[float] = DEFAULT_GRID, ks: Sequence[int] = (1, 5, 20, 100)
) -> list[dict[str, Any]]:
    """Top-k accuracy (percent) at every weight of the grid."""
    curve = []
    for weight in weights:
        ranks = [first_hit_rank(c, weight, max(ks)) for c in questions]
        curve.append({"weight": float(weight), "top_k": top_k_accuracy_from_ranks(ranks, list(ks))})
    return curve


def best_weight(curve: list[dict[str, Any]], objective_ks: Sequence[int] = (1, 5, 20)) -> float:
    """The weight with the highest mean top-k accuracy over ``objective_ks`` (smallest weight on ties)."""

    def objective(point: dict[str, Any]) -> float:
        return float(np.mean([point["top_k"][k] for k in objective_ks]))

    return max(curve, key=lambda p: (objective(p), -p["weight"]))["weight"]


def write_lambda_report(
    out_dir: str | Path, curve: list[dict[str, Any]], best: float, objective_ks: Sequence[int], command: str, n: int
) -> None:
    """``lambda.md`` (best λ and the curve), ``lambda.json`` and ``lambda.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    figure, axis = plt.subplots(figsize=(7, 4))
    positive = [p for p in curve if p["weight"] > 0]
    for k in ks:
        axis.plot([p["weight"] for p in positive], [p["top_k"][k] for p in positive], label=f"top-{k}")
    axis.axvline(best, color="grey", linestyle="--", linewidth=1)
    axis.set_xscale("log")
    axis.set_xlabel("λ")
    axis.set_ylabel("top-k accuracy (%)")
    axis.legend()
    figure.tight_layout()
    try:
        with reporting_write_errors(out / "lambda.png"), atomic_path(out / "lambda.png") as tmp:
            figure.savefig(tmp, format="png", dpi=110)
    finally:
        plt.close(figure)


def _hybrid_inputs(pipeline: Any) -> tuple[str, str, Any]:
    """Names of the components feeding the HybridRanker's two lists, and the ranker."""
    from dpr_components.ranker import HybridRanker

    for name, instance in pipeline.walk():
        if isinstance(instance, HybridRanker):
            senders = {}
            for sender, receiver, data in pipeline.graph.edges(data=True):
                if receiver == name:
                    senders[data["to_socket"].name] = sender
            if "bm25_documents" not in senders or "dense_documents" not in senders:
                raise ValueError(f"HybridRanker {name!r} needs both bm25_documents and dense_documents connected")
            return senders["bm25_documents"], senders["dense_documents"], instance
    raise ValueError("the pipeline has no HybridRanker")


def command_fit_lambda(args: Any) -> int:
    from dpr_components.evaluation.questions import load_questions
    from dpr_components.pipeline_loading import load_pipeline

    objective_ks = parse_objective(args.objective)
    prepare_output_folder(args.out)
    pipeline = load_pipeline(args.pipeline, args.store, args.overrides, args.allow_network, require_stores=True)
    bm25_name, dense_name, ranker = _hybrid_inputs(pipeline)
    if ranker.mode != "dpr":
        raise ValueError("fit-lambda tunes HybridRanker mode 'dpr'")
    questions = load_questions(args.questions, split=args.split, limit=args.limit)
    candidates = []
    for example in tqdm(questions, desc="Scoring candidates", unit="question"):
        try:
            result = run_pipeline_with_outputs(pipeline, example.question, {bm25_name, dense_name})
        except ValueError as error:
            raise ValueError(f"question {example.id!r}: {' '.join(str(error).split())}") from None
        candidates.append(
            collect_candidates(
                ranker._backend, example.question, result[dense_name]["query_embedding"],
                result[bm25_name]["documents"], result[dense_name]["documents"], example.answers, args.match,
            )
        )
    curve = lambda_curve(candidates, ks=sorted({1, 5, 20, 100, *objective_ks}))
    best = best_weight(curve, objective_ks)
    command = args.command_line
    write_lambda_report(args.out, curve, best, objective_ks, command, len(candidates))
    print(f"best λ = {best:g}; report in {args.out}/lambda.md (set it with --set <ranker>.weight={best:g})")
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
    from dpr_components.cli import run_pipeline

    return run_pipeline(pipeline, {"query": query}, include_outputs_from=names)
