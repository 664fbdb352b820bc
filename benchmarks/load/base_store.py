"""The store the load benchmarks serve (examples/corpus.jsonl and ``--base-records`` short records) and the run
around a measurement on it: the report re-rendered from its JSON, or the store built in a temporary folder,
measured and the report written."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import REPO_ROOT, command_line, cpu_name, log, write_report
from benchmarks.load.mixed_clients import corpus_rows, make_records
from dpr_components.utils.threads import usable_cores

CORPUS = REPO_ROOT / "examples" / "corpus.jsonl"


def build_store(work: Path, base_records: int, words: int) -> Path:
    """examples/corpus.jsonl and ``base_records`` records of ``words`` words indexed with pipelines/index.yml
    into ``work/base-store``."""
    from dpr_components.cli.main import main
    from dpr_components.pipeline_files.loading import load_pipeline

    store = work / "base-store"
    argv = ["run", str(REPO_ROOT / "pipelines" / "index.yml"), "--input", f"path={CORPUS}", "--store", str(store)]
    no_cache = ["embedder.cache_dir=null", "embedder.progress_bar=false"]
    if main([*argv, *[arg for setting in no_cache for arg in ("--set", setting)]]) != 0:
        raise SystemExit("indexing examples/corpus.jsonl failed")
    if base_records:
        pipeline = load_pipeline(REPO_ROOT / "pipelines" / "index.yml", str(store), no_cache)
        records = make_records(corpus_rows(CORPUS), "base", 0, base_records, words)
        pipeline.run({"reader": {"records": records}})
        pipeline.get_component("writer").document_store.save()  # now, not when the folder is gone
    return store


def run_report(
    module: str,
    args: argparse.Namespace,
    settings: dict[str, Any],
    measure: Callable[[Path, Path], dict[str, Any]],
    render: Callable[[dict[str, Any], str], str],
) -> None:
    """With ``--from-json`` the report at ``args.out`` rendered again from its JSON; else the base store built
    in a temporary folder (with an empty ``served/`` beside it), ``measure(work, base)`` run on it, and the
    summary (the machine, ``settings``, what was measured, the command) written as the report."""
    out = Path(args.out)
    if args.from_json:
        summary = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
        write_report(out, summary, render(summary, summary["command"]))
        return
    command = command_line(module, sys.argv[1:])
    with tempfile.TemporaryDirectory(prefix=f"{module.rsplit('.', 1)[-1].replace('_', '-')}-") as folder:
        work = Path(folder)
        (work / "served").mkdir()
        log(f"indexing examples/corpus.jsonl and {args.base_records} records")
        base = build_store(work, args.base_records, args.words)
        load_start = os.getloadavg()[0]
        measured = measure(work, base)
    summary = {
        "cpu": cpu_name(),
        "cores": usable_cores(),
        "load_average": [round(load_start, 2), round(os.getloadavg()[0], 2)],
        **settings,
        **measured,
        "command": command,
    }
    write_report(out, summary, render(summary, command))
    log(f"wrote {args.out}.md")
