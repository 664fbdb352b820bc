"""The reduced-budget ablations of the NQ recipe (docs/training/ablations.md, .json and the
sample-efficiency plot), from runs scored by training/retriever/sampled_pool_eval.py. Top-k accuracies carry
their 95% Wilson score interval (only each run's accuracies and number of questions are kept)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dpr_components.evaluation.figures import new_figure, save_png
from dpr_components.evaluation.intervals import wilson_interval
from dpr_components.evaluation.metric_intervals import interval_cell
from dpr_components.evaluation.tables import table_header, table_row
from dpr_components.evaluation.templates import fill_template, sibling_template
from dpr_components.utils.atomic_files import atomic_write_text
from training.retriever.run_records import ABLATIONS, ablation_groups, collect_sampled

KS = (1, 5, 20, 100)
SETTINGS = ("subset", "batch_size", "negatives", "epochs", "learning_rate", "grad_cache_chunk")
TEMPLATE = sibling_template(__file__, "ablation_report.md.template")
WILSON_NOTE = (
    "In brackets: the 95% Wilson score interval of each top-k accuracy (Wilson 1927). Only each run's "
    "accuracies, MRR and average rank over its questions were kept, not per-question results: a bootstrap over "
    "questions is not possible, MRR and average rank have no interval, and differences between rows are not "
    "tested. Rows whose intervals overlap may or may not differ; no setting is claimed better than another here."
)


def _cells(metrics: dict[str, float], questions: int | None = None) -> list[str]:
    top_k = [
        interval_cell(wilson_interval(metrics[f"top{k}"] / 100, int(questions)).scaled(100))
        if questions
        else f"{metrics[f'top{k}']:.1f}"
        for k in KS
    ]
    return [*top_k, f"{metrics['mrr']:.3f}", f"{metrics['avg_rank']:.2f}"]


def _header(first: list[str]) -> list[str]:
    columns = first + [f"top-{k}" for k in KS] + ["MRR", "avg. rank"]
    return table_header(columns, "l" * len(first) + "r" * (len(columns) - len(first)))


def _speed_cells(run: dict[str, Any]) -> list[str]:
    training = run["training"]
    hours, rate, peak = training.get("hours"), training.get("examples_per_second"), training.get("peak_rss_mb")
    return [f"{hours:.2f}" if hours else "", f"{rate:.1f}" if rate else "", f"{peak / 1024:.1f}" if peak else ""]


def render(
    baseline: dict[str, Any] | None, runs: list[dict[str, Any]], command: str, rerendered_by: str | None = None
) -> str:
    """ablations.md: the zero-shot baseline and one table per setting the runs differ in."""
    some = baseline or runs[0]
    produced = f"Produced by: `{command}` after the training commands listed in training/README.md."
    if rerendered_by:
        produced += f" Intervals added from the stored results, nothing evaluated again, by: `{rerendered_by}`."
    intervals = any(row.get("questions") for row in [*([baseline] if baseline else []), *runs])
    lines = ["", WILSON_NOTE] if intervals else []
    if baseline:
        lines += [
            "",
            "## Zero-shot MiniLM on the same candidates",
            "",
            *_header(["system"]),
            table_row(["minilm-zero-shot", *_cells(baseline["metrics"], baseline.get("questions"))]),
        ]
    lines += ablation_sections(runs)
    if any(ablation_groups(runs, "subset")):
        lines += ["", "![top-k accuracy against training questions](sample_efficiency.png)"]
    values = {
        "questions": some["questions"],
        "candidates": f"{some['candidates']:,}",
        "produced": produced,
        "sections": "".join(f"\n{line}" for line in lines),
    }
    return fill_template(TEMPLATE, values)


def ablation_sections(runs: list[dict[str, Any]]) -> list[str]:
    """One table per setting that runs differ in: their speed and accuracy."""
    lines: list[str] = []
    for field, title in ABLATIONS.items():
        for group in ablation_groups(runs, field):
            lines += [
                "",
                f"## {title[0].upper() + title[1:]}",
                "",
                *_header([field, "run", "train hours", "examples/s", "peak GB"]),
            ]
            for run in group:
                value = run["variant"][field]
                if field == "batch_size" and run["variant"].get("grad_cache_chunk"):
                    value = f"{value} (GradCache, chunks of {run['variant']['grad_cache_chunk']})"
                lines.append(
                    table_row(
                        [
                            f"{run['training'].get('examples'):,} (all)" if value is None else str(value),
                            run["name"],
                            *_speed_cells(run),
                            *_cells(run["metrics"], run.get("questions")),
                        ]
                    )
                )
    return lines


def plot_sample_efficiency(baseline: dict[str, Any] | None, runs: list[dict[str, Any]], out: Path) -> bool:
    """Top-1/5/20 against the number of training questions; False when no subset sweep exists."""
    groups = ablation_groups(runs, "subset")
    if not groups:
        return False
    group = max(groups, key=len)
    sizes = [r["training"].get("examples") or r["variant"]["subset"] for r in group]
    figure = new_figure((6, 4))
    axis = figure.subplots()
    for k, colour in zip((1, 5, 20), ("tab:blue", "tab:orange", "tab:green"), strict=True):
        axis.plot(sizes, [r["metrics"][f"top{k}"] for r in group], marker="o", color=colour, label=f"top-{k}")
        if baseline:
            axis.axhline(baseline["metrics"][f"top{k}"], color=colour, linestyle=":", linewidth=1)
    axis.set_xscale("log")
    axis.set_xticks(sizes, [f"{s:,}" for s in sizes])
    axis.minorticks_off()
    axis.set_xlabel("NQ training questions (one epoch)")
    axis.set_ylabel("nq/dev top-k accuracy, sampled pool (%)")
    axis.set_title("Sample efficiency (dotted: zero-shot MiniLM)")
    axis.legend()
    figure.tight_layout()
    save_png(figure, out, dpi=110)
    return True


def render_ablations_from_json(payload: dict[str, Any], rerendered_by: str) -> str:
    """ablations.md again from its stored ablations.json (no run folder needed)."""
    return render(payload.get("zero_shot"), payload["runs"], payload["command"], rerendered_by)


def write_ablation_report(root: Path, out: Path, command: str) -> Path | None:
    baseline, runs = collect_sampled(root)
    if not runs:
        return None
    atomic_write_text(out / "ablations.md", render(baseline, runs, command))
    payload = {
        "command": command,
        "zero_shot": baseline,
        "runs": [
            {k: r[k] for k in ("name", "variant", "training", "metrics", "questions", "candidates")} for r in runs
        ],
    }
    atomic_write_text(out / "ablations.json", json.dumps(payload, indent=1))
    plot_sample_efficiency(baseline, runs, out / "sample_efficiency.png")
    return out / "ablations.md"
