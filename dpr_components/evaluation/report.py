"""Write a retrieval evaluation report: ``report.md`` (summary table), ``report.json`` (full
top-k curves) and ``topk_accuracy.png`` (curves for k = 1..100). All writes are atomic."""

from __future__ import annotations

import json
import logging
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpr_components.evaluation.figures import new_figure, save_png
from dpr_components.evaluation.retrieval_metrics import RetrievalResult
from dpr_components.evaluation.tables import markdown_table, produced_by
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.extras import PLOTS, is_installed, missing_extra_message
from dpr_components.utils.fault_points import fault_point
from dpr_components.utils.output_files import (
    prepare_output_folder,
    reporting_write_errors,
)

if TYPE_CHECKING:  # the statistics stack is imported only by reports that have intervals
    from dpr_components.evaluation.metric_intervals import ReportIntervals

logger = logging.getLogger(__name__)

TABLE_KS = (1, 5, 20, 100)
REPORT_MD = "report.md"
REPORT_JSON = "report.json"
REPORT_PNG = "topk_accuracy.png"


@dataclass
class ReportTable:
    """An extra table for the report, e.g. reader exact match / F1 per system."""

    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""

    def __post_init__(self) -> None:
        for index, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(f"table {self.title!r}, row {index}: {len(row)} cells for {len(self.columns)} columns")


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value).replace("|", "\\|")


def _markdown_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    return markdown_table([_cell(c) for c in columns], [[_cell(v) for v in row] for row in rows])


def _command_text(command: str | Sequence[str]) -> str:
    return command if isinstance(command, str) else shlex.join(command)


def _render_markdown(
    systems: Mapping[str, RetrievalResult],
    title: str,
    command: str,
    dataset_name: str,
    extra_tables: Sequence[ReportTable],
    intervals: ReportIntervals | None = None,
    plotted: bool = True,
) -> str:
    columns = ["System", *(f"Top-{k}" for k in TABLE_KS), "MRR", "Questions"]
    rows = [
        [name, *(result.top_k.get(k) for k in TABLE_KS), f"{result.mrr:.4f}", result.n_questions]
        if intervals is None
        else [
            name,
            *(intervals.cell(name, f"top_{k}") for k in TABLE_KS),
            intervals.cell(name, "mrr"),
            result.n_questions,
        ]
        for name, result in systems.items()
    ]
    counts = sorted({result.n_questions for result in systems.values()})
    lines = [f"# {title}", ""]
    if not systems:
        lines.append(f"Dataset: {dataset_name}.")
    else:
        lines += [
            f"Dataset: {dataset_name} ({', '.join(str(n) for n in counts)} questions).",
            "",
            "Top-k accuracy: percent of questions with an answer-containing passage among the top k "
            "retrieved (DPR's metric). MRR: mean reciprocal rank of the first such passage, "
            "cut off at each system's deepest k.",
            "",
            *_markdown_table(columns, rows),
            "",
            *([intervals.note(), ""] if intervals is not None else []),
            f"Full curves (k = 1..100) are in `{REPORT_JSON}`" + (f" and `{REPORT_PNG}`." if plotted else "."),
        ]
    for table in extra_tables:
        lines += ["", f"## {table.title}", ""]
        if table.note:
            lines += [table.note, ""]
        lines += _markdown_table(table.columns, table.rows)
    lines += ["", *produced_by(command)]
    return "\n".join(lines)


def _plot(path: Path, systems: Mapping[str, RetrievalResult], title: str, log_x: bool) -> None:
    figure = new_figure((7, 4.5), dpi=120)
    axes = figure.add_subplot()
    for name, result in systems.items():
        ks = sorted(result.top_k)
        axes.plot(ks, [result.top_k[k] for k in ks], label=name, linewidth=1.6)
    if log_x:
        axes.set_xscale("log")
        ticks = [k for k in (1, 2, 5, 10, 20, 50, 100) if any(k <= r.max_k for r in systems.values())]
        axes.set_xticks(ticks, [str(k) for k in ticks])
        axes.minorticks_off()
    axes.set_xlabel("k (number of retrieved passages)")
    axes.set_ylabel("Top-k accuracy (%)")
    axes.set_ylim(0, 100)
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(loc="lower right")
    figure.tight_layout()
    save_png(figure, path)


def _write_plot(path: Path, systems: Mapping[str, RetrievalResult], title: str, log_x: bool) -> bool:
    """The top-k curves at ``path``; False when there is none to draw (answers only, e.g. a QA pipeline) or
    matplotlib is not installed (an extra: the report is written without its plot, and a line says so)."""
    if not systems:
        return False
    if not is_installed(PLOTS):
        logger.warning(missing_extra_message(PLOTS, f"{path.name} was not written: the plot"))
        return False
    with reporting_write_errors(path):
        _plot(path, systems, title, log_x)
    return True


def write_retrieval_report(
    out_dir: str | os.PathLike[str],
    systems: Mapping[str, RetrievalResult],
    title: str,
    command: str | Sequence[str],
    dataset_name: str,
    extra_tables: Sequence[ReportTable] = (),
    log_x: bool = True,
    intervals: ReportIntervals | None = None,
) -> dict[str, Path]:
    """Write ``report.md``, ``report.json`` and ``topk_accuracy.png`` into ``out_dir`` (the plot only with
    matplotlib installed, the ``plots`` extra; a warning says when it is left out).

    ``command`` is the command line that produced the numbers (a string or argv list); with
    ``intervals``, table cells show them and report.json has them under ``"intervals"``.
    Returns the written paths by kind (``"markdown"``, ``"json"``, ``"plot"``)."""
    if not systems and not extra_tables:
        raise ValueError("systems must contain at least one retrieval result")
    out = Path(out_dir)
    command_text = _command_text(command)
    paths = {"markdown": out / REPORT_MD, "json": out / REPORT_JSON, "plot": out / REPORT_PNG}
    summary = {
        "title": title,
        "dataset": dataset_name,
        "command": command_text,
        "systems": {name: result.to_dict() for name, result in systems.items()},
        "extra_tables": [
            {"title": t.title, "columns": t.columns, "rows": t.rows, "note": t.note} for t in extra_tables
        ],
    }
    if intervals is not None:
        summary["intervals"] = intervals.to_dict()
    prepare_output_folder(out, "report folder")
    with reporting_write_errors(paths["json"]):
        atomic_write_text(paths["json"], json.dumps(summary, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    fault_point("report.after_json")
    plotted = _write_plot(paths["plot"], systems, title, log_x)
    if not plotted:
        del paths["plot"]
    with reporting_write_errors(paths["markdown"]):
        atomic_write_text(
            paths["markdown"],
            _render_markdown(systems, title, command_text, dataset_name, extra_tables, intervals, plotted),
        )
    return paths
