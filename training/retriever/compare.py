"""Compare systems evaluated by ``training.retriever.evaluate`` on the same question files: each top-k
accuracy with its 95% bootstrap interval, and each system minus the first with its paired-bootstrap
interval and McNemar's exact p (a gain is *supported* when its interval lies wholly above zero).

    python -m training.retriever.compare runs/eval/zero-shot.json runs/eval/candidate.json --out runs/eval/compare.md
    python -m training.retriever.compare A.json B.json --names zero-shot,candidate --ks 1,5,20

Every file must hold the same datasets with the same questions in the same order (the first-hit
ranks are paired question by question)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpr_components.evaluation.intervals import mcnemar, paired_bootstrap_difference, score_interval
from dpr_components.evaluation.metric_intervals import difference_cell, hits_at, interval_cell
from dpr_components.utils.atomic_files import atomic_write_text

DEFAULT_KS = (1, 5, 20, 100)
INTERVALS_NOTE = (
    "Cells: top-k accuracy in percent with its 95% percentile-bootstrap interval over questions (10,000 "
    "resamples, seed 0). Difference rows: the system minus the first, its paired-bootstrap interval, "
    "*gain* or *loss* when the interval excludes zero (— when it does not), and McNemar's exact p."
)


def _ranks(evaluation: dict[str, Any], dataset: str, source: str) -> list[int | None]:
    try:
        return list(evaluation["datasets"][dataset]["first_hit_ranks"])
    except KeyError:
        raise ValueError(
            f"{source}: no first_hit_ranks for {dataset!r} (a training.retriever.evaluate output?)"
        ) from None


def dataset_table(names: Sequence[str], ranks: Sequence[Sequence[int | None]], ks: Sequence[int]) -> list[str]:
    """Markdown rows: every system's top-k with intervals, then each later system minus the first."""
    lines = ["| system | " + " | ".join(f"top-{k}" for k in ks) + " |", "|---|" + "---:|" * len(ks)]
    for name, system in zip(names, ranks, strict=True):
        cells = [interval_cell(score_interval(hits_at(system, k)).scaled(100), name_method=True) for k in ks]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for name, system in zip(names[1:], ranks[1:], strict=True):
        cells = []
        for k in ks:
            ours, first = hits_at(system, k), hits_at(ranks[0], k)
            difference = paired_bootstrap_difference(ours, first).scaled(100)
            cells.append(difference_cell(difference, mcnemar(ours, first)))
        lines.append(f"| {name} − {names[0]} | " + " | ".join(cells) + " |")
    return lines


def compare(paths: Sequence[str], names: Sequence[str], ks: Sequence[int]) -> str:
    """The markdown comparison of the evaluation files ``paths``."""
    evaluations = [json.loads(Path(path).read_text(encoding="utf-8")) for path in paths]
    lines: list[str] = []
    for dataset in evaluations[0]["datasets"]:
        ranks = [_ranks(evaluation, dataset, path) for evaluation, path in zip(evaluations, paths, strict=True)]
        if len({len(r) for r in ranks}) != 1:
            raise ValueError(f"{dataset}: the files hold different numbers of questions: {[len(r) for r in ranks]}")
        match = evaluations[0]["datasets"][dataset].get("match", "answer")
        lines += [f"## {dataset} ({len(ranks[0])} questions, {match} hits)", ""]
        lines += [*dataset_table(names, ranks, ks), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "evaluations", nargs="+", help="training.retriever.evaluate JSON outputs; the first is the reference"
    )
    parser.add_argument("--names", help="comma-separated system names (default: the files' systems)")
    parser.add_argument("--ks", default=",".join(map(str, DEFAULT_KS)), help="top-k columns (default 1,5,20,100)")
    parser.add_argument("--title", default="Comparison", help="the report's heading")
    parser.add_argument("--out", help="markdown file to write (default: print)")
    args = parser.parse_args(argv)
    names = args.names.split(",") if args.names else [Path(p).stem for p in args.evaluations]
    if len(names) != len(args.evaluations):
        parser.error(f"--names gives {len(names)} names for {len(args.evaluations)} files")
    try:
        text = compare(args.evaluations, names, [int(k) for k in args.ks.split(",")])
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    command = "python -m training.retriever.compare " + shlex.join(sys.argv[1:] if argv is None else argv)
    text = f"# {args.title}\n\nProduced by: `{command}`\n\n{INTERVALS_NOTE}\n\n{text}"
    if args.out:
        atomic_write_text(args.out, text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
