"""Choose ``PassageRanker``'s ``retrieval_weight`` w on the selection splits: each passage of the
hybrid's top 20 scores ``logit + w * hybrid score``, and the w with the best mean top-1 over the
splits (gold-passage hits, each split weighted equally) wins; ties go to the smaller w.

    python -m training.reader.fit_rerank_weight --ranker runs/ranker-minilm/export --max-length 192 \\
        --questions data/selection/nq-train-selection.jsonl,data/selection/squad-train-selection.jsonl \\
        --store indexes/pool --out docs/training/selection/rerank-weight

The hybrid and the ranker run once per question (their scores are kept in the JSON); every w
re-orders the same scores. Reports top-1 and top-5 per split with 95% bootstrap intervals and the
paired difference from the hybrid's own order."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from dpr_components.evaluation.intervals import paired_bootstrap_difference, score_interval
from dpr_components.evaluation.metric_intervals import difference_cell, interval_cell
from dpr_components.evaluation.questions import load_questions
from dpr_components.evaluation.tables import markdown_table, produced_by
from dpr_components.pipeline_files.loading import load_pipeline
from haystack_integrations.components.rankers.dpr.passage_ranker import PassageRanker
from training.common.report_folder import add_report_options, measured_summary, write_report_folder

SEARCH_RERANK = Path(__file__).resolve().parents[1] / "pipelines" / "search_rerank.yml"
WEIGHTS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0)
KS = (1, 5)


def scored_split(path: str, hybrid: Any, ranker: PassageRanker) -> dict[str, Any]:
    """Per question of ``path`` (with gold_ids): ``hybrid``'s top 20 in its order, with each
    passage's hybrid score, ranker logit and gold hit."""
    questions = [q for q in load_questions(path) if q.gold_ids]
    rows = []
    for q in tqdm(questions, desc=f"scoring {Path(path).name}", unit="q"):
        documents = hybrid.run(query=q.question)["documents"]
        logits = {
            d.id: d.score for d in ranker.run(query=q.question, documents=documents, top_k=len(documents))["documents"]
        }
        gold = set(q.gold_ids)
        rows.append(
            {
                "retrieval": [float(d.score) for d in documents],
                "logit": [float(logits[d.id]) for d in documents],
                "hit": [d.meta.get("document_id") in gold for d in documents],
            }
        )
    return {"file": path, "questions": rows}


def fused_hits(rows: list[dict[str, Any]], weight: float | None, k: int) -> np.ndarray:
    """1 where a gold passage is in the top k when ordered by ``logit + weight * retrieval``
    (``None``: the hybrid's own order); ties keep the hybrid's order."""
    out = np.zeros(len(rows))
    for i, row in enumerate(rows):
        if weight is None:
            order = list(range(len(row["hit"])))
        else:
            fused = np.asarray(row["logit"]) + weight * np.asarray(row["retrieval"])
            order = sorted(range(len(fused)), key=lambda j: -fused[j])
        out[i] = float(any(row["hit"][j] for j in order[:k]))
    return out


def choose(splits: list[dict[str, Any]], weights: tuple[float, ...]) -> float:
    """The weight with the best mean top-1 over the splits (the smaller on ties)."""
    means = {w: float(np.mean([fused_hits(s["questions"], w, 1).mean() for s in splits])) for w in weights}
    best = max(means.values())
    return min(w for w, m in means.items() if m == best)


def _cell(values: np.ndarray) -> str:
    return interval_cell(score_interval(values).scaled(100), name_method=True)


def _difference(values: np.ndarray, reference: np.ndarray) -> str:
    return difference_cell(paired_bootstrap_difference(values * 100, reference * 100))


def render(summary: dict[str, Any], command: str) -> str:
    chosen = summary["chosen_weight"]
    lines = [
        "# Re-ranking: the retrieval weight chosen on the selection splits",
        "",
        f"Ranker `{summary['ranker']}` ({summary['max_length']} tokens) over `pipelines/search_rerank.yml`'s hybrid "
        f"top 20 on `{summary['store']}`; gold-passage hits. Each passage scores logit + w × hybrid score; "
        f"w = {chosen:g} has the best mean top-1 over the splits (grid {', '.join(f'{w:g}' for w in summary['weights'])}). "
        "Cells: accuracy with its 95% bootstrap interval; differences are paired, against the hybrid's order.",
        "",
    ]
    for split in summary["splits"]:
        rows = split["questions"]
        lines += [f"## {split['file']} ({len(rows)} questions)", ""]
        body = []
        for label, weight in (
            ("hybrid (no re-ranking)", None),
            ("ranker alone (w = 0)", 0.0),
            (f"w = {chosen:g}", chosen),
        ):
            cells = [_cell(fused_hits(rows, weight, k)) for k in KS]
            if weight is not None:
                cells += [_difference(fused_hits(rows, weight, k), fused_hits(rows, None, k)) for k in KS]
            else:
                cells += ["", ""]
            body.append([label, *cells])
        header = ["order", *(f"top-{k}" for k in KS), *(f"top-{k} − hybrid" for k in KS)]
        lines += [*markdown_table(header, body, "l" + "r" * (2 * len(KS))), ""]
        curve = [[f"{w:g}", *(f"{100 * fused_hits(rows, w, k).mean():.1f}" for k in KS)] for w in summary["weights"]]
        lines += [*markdown_table(["w", *(f"top-{k}" for k in KS)], curve, "r" * (1 + len(KS))), ""]
    lines += produced_by(command)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranker", required=True, help="DPRReader folder or bundled name")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--questions", required=True, help="comma-separated selection files (with gold_ids)")
    parser.add_argument("--store", default="indexes/pool")
    add_report_options(parser)
    args = parser.parse_args(argv)

    def measure() -> dict[str, Any]:
        ranker = PassageRanker(model=args.ranker, max_length=args.max_length, top_k=20)
        ranker.warm_up()
        hybrid = load_pipeline(SEARCH_RERANK, args.store, []).get_component("hybrid")
        hybrid.warm_up()
        splits = [scored_split(path, hybrid, ranker) for path in args.questions.split(",")]
        return {"ranker": args.ranker, "max_length": args.max_length, "store": args.store, "splits": splits}

    summary = measured_summary(args, "training.reader.fit_rerank_weight", argv, measure)
    summary["weights"] = list(WEIGHTS)
    summary["chosen_weight"] = choose(summary["splits"], WEIGHTS)
    write_report_folder(args.out, summary, render(summary, summary["command"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
