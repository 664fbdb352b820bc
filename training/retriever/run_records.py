"""The records of finished DPR runs under a runs folder: evaluations, training results, sampled-pool
scores, and the groups of runs that differ in one setting (ablations). Read by the reports."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ABLATIONS = {
    "negatives": "BM25 hard negatives per question",
    "batch_size": "batch size (questions)",
    "subset": "NQ training questions (sample efficiency)",
    "squad_questions": "SQuAD questions added",
    "question_side": "question encoder alone (passage encoder fixed)",
    "dense_negatives": "dense hard negatives added to BM25's",
}


def load_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, or None when there is no such file."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


# Settings that do not change what is learned (or only how fast), ignored when grouping ablations.
NOT_ABLATED = ("grad_cache_chunk", "validation", "threads", "bf16", "seed")


# Variant fields added after earlier runs were recorded, with the value those runs had.
LATER_FIELDS = {
    "multi": False,
    "question_side": False,
    "dense_negatives": False,
    "seed": 12345,
    "exclude_selection": False,
}


def carry_over(current: list[dict[str, Any]], previous: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the previous report whose runs are not among ``current`` (their folders are gone),
    marked archived, followed by ``current``."""
    names = {r["name"] for r in current}
    return [{**r, "archived": True} for r in previous if r["name"] not in names] + current


def collect(root: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Baselines, trained runs and weight averages of runs (``train_dpr_nq --soup``), with their evaluations."""
    baselines = [
        json.loads(p.read_text(encoding="utf-8"))
        for p in sorted((root / "baselines").glob("*.json"))
        if not p.name.startswith("sampled-")
    ]
    runs, soups = [], []
    for evaluation in sorted(root.glob("*/eval.json"), key=_natural_key):
        run = json.loads(evaluation.read_text(encoding="utf-8"))
        if "soup" in run:
            soups.append(run)
            continue
        run["training"] = _training(evaluation.parent)
        runs.append(run)
    return baselines, runs, soups


def _natural_key(path: Path) -> list[Any]:
    """Order run folders with their numbers as numbers (squad7000 before squad14000)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def _training(folder: Path) -> dict[str, Any]:
    result = load_json(folder / "result.json") or {}
    return {
        "steps": result.get("steps"),
        "best_step": result.get("best_step"),
        "examples": result.get("examples"),
        "hours": _training_hours(folder / "log.jsonl"),
        "examples_per_second": result.get("examples_per_second"),
        "peak_rss_mb": result.get("peak_rss_mb"),
    }


def collect_sampled(root: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """Zero-shot and trained runs scored against the sampled pool (training/retriever/sampled_pool_eval.py)."""
    baseline = load_json(root / "baselines" / "sampled-minilm-zero-shot.json")
    runs = []
    for path in sorted(root.glob("*/sampled_eval.json")):
        run = json.loads(path.read_text(encoding="utf-8"))
        run["variant"] = load_json(path.parent / "variant.json") or {}
        run["training"] = _training(path.parent)
        runs.append(run)
    return baseline, runs


def ablation_groups(runs: list[dict[str, Any]], field: str) -> list[list[dict[str, Any]]]:
    """Runs that differ in ``field`` only (settings in NOT_ABLATED aside), two or more per group."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        variant = {**LATER_FIELDS, **run["variant"]}
        rest = {k: v for k, v in variant.items() if k != field and k not in NOT_ABLATED}
        groups.setdefault(json.dumps(rest, sort_keys=True), []).append(run)
    ordered = []
    for group in groups.values():
        values = [{**LATER_FIELDS, **r["variant"]}[field] for r in group]
        if len({json.dumps(v) for v in values}) >= 2:
            # subset None means all questions: sort it last
            order = sorted(range(len(group)), key=lambda i: 10**9 if values[i] is None else values[i])
            ordered.append([group[i] for i in order])
    return ordered


def _training_hours(log: Path) -> float | None:
    if not log.is_file():
        return None
    elapsed = [
        json.loads(line).get("elapsed_s") for line in log.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    elapsed = [e for e in elapsed if e is not None]
    return max(elapsed) / 3600 if elapsed else None
