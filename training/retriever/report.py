"""Write the recipe's report (docs/training/dpr_nq.md and .json) from finished runs.

    python -m training.retriever.report                      # reads runs/dpr-nq, writes docs/training
    python -m training.retriever.report --from-json          # re-render docs/training/*.md from their JSON

Baselines come from runs/dpr-nq/baselines/*.json, trained runs from runs/dpr-nq/*/eval.json
(with their variant.json, result.json and log.jsonl), weight averages of runs from
runs/dpr-nq/soup*/eval.json. Runs that differ in one setting only
(hard negatives, batch size, training questions, SQuAD added, question side, dense negatives)
are also shown side by side. Rows of runs whose folders are gone are carried over from the
previous docs/training/dpr_nq.json, marked †.

Each accuracy has its 95% Wilson score interval: the report keeps only each run's accuracy and
number of questions, not per-question results, so a bootstrap over questions and paired differences
between rows are not possible here (training.retriever.compare does both from training.retriever.evaluate outputs).
``--from-json`` rewrites dpr_nq.md and ablations.md from dpr_nq.json and ablations.json, no run
folder needed."""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path
from typing import Any

from dpr_components.evaluation.intervals import wilson_interval
from dpr_components.evaluation.metric_intervals import interval_cell
from dpr_components.evaluation.tables import table_header, table_row
from dpr_components.evaluation.templates import fill_template, sibling_template
from dpr_components.utils.atomic_files import atomic_write_text
from training.retriever.ablation_report import render_ablations_from_json, write_ablation_report
from training.retriever.run_records import (
    ABLATIONS,
    LATER_FIELDS,
    ablation_groups,
    carry_over,
    collect,
    collect_sampled,
    load_json,
)

KS = ("1", "5", "20", "100")
DATASETS = ("nq/dev.jsonl", "squad/dev.jsonl")


TEMPLATE = sibling_template(__file__, "report.md.template")
WILSON_NOTE = (
    "In brackets: the 95% Wilson score interval of each accuracy (Wilson 1927). This report keeps only each "
    "system's accuracy and number of questions, not per-question results, so a bootstrap over questions is not "
    "possible, and differences between rows are not tested here: rows whose intervals overlap may or may not "
    "differ, and no row is claimed better than another. Paired comparisons on the same questions, for the "
    "encoders chosen under the protocol, are in `docs/training/selection.md`."
)

ARCHIVED_MARK = " †"
ARCHIVED_NOTE = (
    "† A run whose folder is no longer kept: its row is carried over from the previous report "
    "(docs/training/dpr_nq.json), evaluated by the code of its time (bf16 autocast encoding, under which "
    "zero-shot MiniLM scored 79.8 / 47.2 top-1 on NQ / SQuAD dev; the current bf16-weights encoding "
    "gives the baseline rows above)."
)


def _group_title(title: str, group: list[dict[str, Any]]) -> str:
    # The multi setting and the continuation both vary squad_questions: name which one a table is.
    return f"{title} (multi setting)" if group[0]["variant"].get("multi") else title


def accuracy_cell(percent: float, n: int | None) -> str:
    """``80.5 [77.3, 83.3]``: an accuracy with its Wilson interval over ``n`` questions (plain without ``n``)."""
    if not n:
        return f"{percent:.1f}"
    return interval_cell(wilson_interval(percent / 100, int(n)).scaled(100))


def _accuracy_cells(run: dict[str, Any]) -> list[str]:
    cells = []
    for dataset in DATASETS:
        found = run["datasets"].get(dataset, {})
        scores, n = found.get("top_k", {}), found.get("n_questions")
        cells += [accuracy_cell(scores[k], n) if k in scores else "" for k in KS]
    return cells


def _has_intervals(rows: list[dict[str, Any]]) -> bool:
    return any(found.get("n_questions") for row in rows for found in row.get("datasets", {}).values())


def _header(first: list[str]) -> list[str]:
    names = {"nq": "NQ", "squad": "SQuAD"}
    columns = first + [f"{names.get(d.split('/')[0], d)} top-{k}" for d in DATASETS for k in KS]
    return table_header(columns, "l" * len(first) + "r" * (len(columns) - len(first)))


def _label(run: dict[str, Any]) -> str:
    return run["name"] + (ARCHIVED_MARK if run.get("archived") else "")


def _run_row(run: dict[str, Any]) -> list[str]:
    variant, training = run["variant"], run["training"]
    hours = training.get("hours")
    return [
        _label(run),
        str(training.get("examples") or ""),
        str(variant["batch_size"]),
        str(variant["negatives"]),
        str(variant["epochs"]),
        f"{hours:.1f}" if hours else "",
    ]


def hybrid_rows(hybrid: list[dict[str, Any]]) -> list[str]:
    """Rows of benchmarks/retrieval/retrieval_quality.py's result for a trained pair (its BM25 + DPR hybrid)."""
    rows = []
    model = hybrid[0].get("model", "trained DPR") if hybrid else ""
    for name in hybrid[0]["full"] if hybrid else []:
        if not name.startswith("hybrid"):
            continue
        run = {
            "datasets": {
                r["dataset"]: {
                    "top_k": {k: r["full"][name]["top_k_accuracy"][k] for k in KS},
                    "n_questions": r["full"][name].get("n_questions"),
                }
                for r in hybrid
            }
        }
        rows.append(table_row([f"BM25 + {model}, {name}", "", "", "", "", "", *_accuracy_cells(run)]))
    return rows


def soup_lines(soups: list[dict[str, Any]]) -> list[str]:
    """The section on weight averages: one row each, then the ingredients and the command."""
    if not soups:
        return []
    lines = [
        "",
        "## Weight averages (model soups)",
        "",
        'The uniform average of the weights of runs that start from the same MiniLM (a "uniform soup", '
        "Wortsman et al. 2022, https://arxiv.org/abs/2203.05482): one model, no extra training; each run "
        "contributes the model evaluated above. The runs to average were picked after seeing their dev "
        "numbers (as were the runs' own settings), so these rows are as optimistic as any choice made on dev; "
        "averaging itself looks at no data.",
        "",
        *_header(["soup", "runs averaged"]),
    ]
    for soup in soups:
        lines.append(table_row([_label(soup), str(len(soup["soup"])), *_accuracy_cells(soup)]))
    lines.append("")
    for soup in soups:
        lines += [f"- {soup['name']}: `python -m training.retriever.train_dpr_nq --soup {','.join(soup['soup'])}`"]
    return lines


def render(
    baselines: list[dict[str, Any]],
    runs: list[dict[str, Any]],
    command: str,
    hybrid: list[dict[str, Any]] | None = None,
    soups: list[dict[str, Any]] | None = None,
    rerendered_by: str | None = None,
) -> str:
    """dpr_nq.md: the results table (baselines, runs, hybrid rows), the soups and one table per ablation."""
    produced = f"Produced by: `{command}` (machine: {platform.machine()}, shared 2-core CPU)."
    if rerendered_by:
        produced += f" Intervals added from the stored results, nothing evaluated again, by: `{rerendered_by}`."
    lines = [
        "",
        *([WILSON_NOTE, ""] if _has_intervals([*baselines, *runs, *(soups or [])]) else []),
        *results_table(baselines, runs, hybrid),
        *soup_lines(soups or []),
        *ablation_tables(runs),
    ]
    if any(r.get("archived") for r in [*runs, *(soups or [])]):
        lines += ["", ARCHIVED_NOTE]
    return fill_template(TEMPLATE, {"produced": produced, "results": "\n".join(lines)})


def results_table(
    baselines: list[dict[str, Any]], runs: list[dict[str, Any]], hybrid: list[dict[str, Any]] | None
) -> list[str]:
    """The baselines' and runs' rows, then the hybrid rows and what they are."""
    lines = _header(["system", "train questions", "batch", "hard neg.", "epochs", "train hours"])
    for baseline in baselines:
        cells = [baseline.get("name", baseline["system"]), "", "", "", "", "", *_accuracy_cells(baseline)]
        lines.append(table_row(cells))
    lines += [table_row(_run_row(run) + _accuracy_cells(run)) for run in runs]
    if hybrid:
        lines += hybrid_rows(hybrid)
        lines += [
            "",
            "Hybrid rows: the DPR paper's BM25 + λ·sim over the union of both top-2,000 lists, from "
            "`docs/training/hybrid/retrieval_quality.md` (its command there; λ fitted on these dev questions, "
            "so optimistic; its 2-fold tables fit and report on separate halves). That report kept these rows' "
            "per-question ranks: it gives them bootstrap intervals and paired differences from dense.",
        ]
    return lines


def ablation_tables(runs: list[dict[str, Any]]) -> list[str]:
    """One table per setting that runs differ in."""
    lines: list[str] = []
    for field, title in ABLATIONS.items():
        for group in ablation_groups(runs, field):
            lines += ["", f"## Ablation: {_group_title(title, group)}", "", *_header([field, "run", "train hours"])]
            for run in group:
                hours = run["training"].get("hours")
                value = {**LATER_FIELDS, **run["variant"]}[field]
                lines.append(
                    table_row(
                        [
                            "all" if value is None else str(value),
                            _label(run),
                            f"{hours:.1f}" if hours else "",
                            *_accuracy_cells(run),
                        ]
                    )
                )
    return lines


def _without_ranks(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` without its datasets' per-question ``first_hit_ranks``."""
    return {
        **record,
        "datasets": {
            k: {kk: vv for kk, vv in v.items() if kk != "first_hit_ranks"} for k, v in record["datasets"].items()
        },
    }


def write_report(root: Path, out: Path, command: str) -> Path | None:
    baselines, runs, soups = collect(root)
    previous = load_json(out / "dpr_nq.json") or {}
    runs = carry_over(runs, previous.get("runs", []))
    soups = carry_over(soups, previous.get("soups", []))
    if not baselines and not runs and not collect_sampled(root)[1]:
        print(f"no finished runs under {root}: nothing to report", file=sys.stderr)
        return None
    hybrid_file = out / "hybrid" / "retrieval_quality.json"
    hybrid = json.loads(hybrid_file.read_text(encoding="utf-8")) if hybrid_file.is_file() else None
    atomic_write_text(out / "dpr_nq.md", render(baselines, runs, command, hybrid, soups))
    payload = {
        "command": command,
        "baselines": [_without_ranks(b) for b in baselines],
        "runs": [_without_ranks(r) for r in runs],
        "soups": [_without_ranks(s) for s in soups],
    }
    atomic_write_text(out / "dpr_nq.json", json.dumps(payload, indent=1))
    print(f"wrote {out / 'dpr_nq.md'}", file=sys.stderr)
    if write_ablation_report(root, out, command):
        print(f"wrote {out / 'ablations.md'}", file=sys.stderr)
    return out / "dpr_nq.md"


def render_from_json(out: Path, rerendered_by: str) -> list[Path]:
    """Rewrite dpr_nq.md and ablations.md from the dpr_nq.json and ablations.json in ``out`` (and the
    hybrid rows from hybrid/retrieval_quality.json): no run folder is read, nothing is evaluated."""
    written = []
    stored = load_json(out / "dpr_nq.json")
    if stored is not None:
        hybrid_file = out / "hybrid" / "retrieval_quality.json"
        hybrid = json.loads(hybrid_file.read_text(encoding="utf-8")) if hybrid_file.is_file() else None
        text = render(
            stored.get("baselines", []),
            stored.get("runs", []),
            stored["command"],
            hybrid,
            stored.get("soups", []),
            rerendered_by=rerendered_by,
        )
        atomic_write_text(out / "dpr_nq.md", text)
        written.append(out / "dpr_nq.md")
    ablations = load_json(out / "ablations.json")
    if ablations is not None:
        atomic_write_text(out / "ablations.md", render_ablations_from_json(ablations, rerendered_by))
        written.append(out / "ablations.md")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", default="runs/dpr-nq")
    parser.add_argument("--out", default="docs/training")
    parser.add_argument(
        "--from-json",
        action="store_true",
        help="re-render OUT/dpr_nq.md and OUT/ablations.md from OUT/dpr_nq.json and OUT/ablations.json",
    )
    args = parser.parse_args(argv)
    command = "python -m training.retriever.report " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.from_json:
        written = render_from_json(Path(args.out), command.strip())
        if not written:
            print(f"no dpr_nq.json or ablations.json in {args.out}: nothing to re-render", file=sys.stderr)
            return 2
        for path in written:
            print(f"wrote {path}", file=sys.stderr)
        return 0
    write_report(Path(args.runs), Path(args.out), command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
