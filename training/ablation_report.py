"""The reduced-budget ablations of the NQ recipe (docs/training/ablations.md, .json and the
sample-efficiency plot), from runs scored by training/sampled_pool_eval.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dpr_components.evaluation.figures import new_figure, save_png
from dpr_components.evaluation.tables import table_header, table_row
from dpr_components.utils.atomic_files import atomic_write_text
from training.run_records import ABLATIONS, ablation_groups, collect_sampled

KS = (1, 5, 20, 100)
SETTINGS = ("subset", "batch_size", "negatives", "epochs", "learning_rate", "grad_cache_chunk")


def _cells(metrics: dict[str, float]) -> list[str]:
    return [f"{metrics[f'top{k}']:.1f}" for k in KS] + [f"{metrics['mrr']:.3f}", f"{metrics['avg_rank']:.2f}"]


def _header(first: list[str]) -> list[str]:
    columns = first + [f"top-{k}" for k in KS] + ["MRR", "avg. rank"]
    return table_header(columns, "l" * len(first) + "r" * (len(columns) - len(first)))


def _speed_cells(run: dict[str, Any]) -> list[str]:
    training = run["training"]
    hours, rate, peak = training.get("hours"), training.get("examples_per_second"), training.get("peak_rss_mb")
    return [f"{hours:.2f}" if hours else "", f"{rate:.1f}" if rate else "", f"{peak / 1024:.1f}" if peak else ""]


def render(baseline: dict[str, Any] | None, runs: list[dict[str, Any]], command: str) -> str:
    some = baseline or runs[0]
    lines = [
        "# DPR recipe ablations on a reduced budget",
        "",
        "Table 3 of Karpukhin et al. (2020) at CPU scale. Each run trains from all-MiniLM-L6-v2 for one epoch "
        "on a seeded sample of nq/train (BM25 negatives mined from the pool), with no validation during training; "
        f"its final encoders are then scored on all {some['questions']} nq/dev questions against one fixed "
        f"candidate set of {some['candidates']:,} passages: every question's gold passage, its first 5 BM25 "
        "negatives and 10,000 passages sampled from the pool (DPR's validation protocol, larger). The gold "
        "passages are always in the set, so accuracies run higher than over the full pool "
        "(docs/training/dpr_nq.md) and compare only with each other. The 7,167-question run is the recipe's "
        "NQ model (validated while training, which does not change its training).",
        "",
        f"Produced by: `{command}` after the training commands listed in training/README.md.",
        "",
        "Training hours, examples/s and peak memory are from each run's log; runs shared the 2-core CPU with "
        "other jobs, so compare speeds only in docs/training/speed.md.",
    ]
    if baseline:
        lines += [
            "",
            "## Zero-shot MiniLM on the same candidates",
            "",
            *_header(["system"]),
            table_row(["minilm-zero-shot"] + _cells(baseline["metrics"])),
        ]
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
                            *_cells(run["metrics"]),
                        ]
                    )
                )
    if any(ablation_groups(runs, "subset")):
        lines += ["", "![top-k accuracy against training questions](sample_efficiency.png)"]
    return "\n".join(lines) + "\n"


def plot_sample_efficiency(baseline: dict[str, Any] | None, runs: list[dict[str, Any]], out: Path) -> bool:
    """Top-1/5/20 against the number of training questions; False when no subset sweep exists."""
    groups = ablation_groups(runs, "subset")
    if not groups:
        return False
    group = max(groups, key=len)
    sizes = [r["training"].get("examples") or r["variant"]["subset"] for r in group]
    figure = new_figure((6, 4))
    axis = figure.subplots()
    for k, colour in zip((1, 5, 20), ("tab:blue", "tab:orange", "tab:green")):
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
