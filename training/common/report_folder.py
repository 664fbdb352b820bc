"""The report folder of a choosing script: ``report.json`` (what was measured, and the command that
measured it) and ``report.md``, written atomically; ``--from-json`` renders again without measuring."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.output_folders import check_report_folder


def add_report_options(parser: argparse.ArgumentParser) -> None:
    """``--out`` (the report folder) and ``--from-json``."""
    parser.add_argument("--out", required=True, help="report folder (report.md, report.json)")
    parser.add_argument("--from-json", action="store_true", help="re-choose and render from the folder's report.json")


def measured_summary(
    args: argparse.Namespace, module: str, argv: list[str] | None, measure: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """The folder's stored summary with ``--from-json``, else ``measure()``; either way with the command that
    measured it (the running command for a stored summary that has none)."""
    command = f"python -m {module} " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.from_json:
        summary = dict(json.loads((Path(args.out) / "report.json").read_text(encoding="utf-8")))
        summary.setdefault("command", command)
        return summary
    return {**measure(), "command": command}


def write_report_folder(out: str | Path, summary: dict[str, Any], markdown: str) -> None:
    """Write ``report.json`` and ``report.md`` (each atomically) and print the markdown."""
    folder = check_report_folder(out)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / "report.json", json.dumps(summary) + "\n")
    atomic_write_text(folder / "report.md", markdown)
    print(markdown)
