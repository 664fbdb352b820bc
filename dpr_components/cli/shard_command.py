"""Sharded indexing on the command line: ``haystack run ... --shard i/N`` and ``haystack merge-shards``.

haystack run pipelines/index.yml --input path=psgs_w100.tsv --shard 3/16 --shard-dir shards
haystack merge-shards pipelines/index.yml shards --store indexes/wiki
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from dpr_components.cli.pipeline_runner import nest_inputs, run_pipeline
from dpr_components.cli.run_inputs import base_inputs
from dpr_components.indexing.shard_check import find_shards
from dpr_components.indexing.shard_merge import BATCH_PASSAGES, merge_shards
from dpr_components.indexing.shard_run import run_shard
from dpr_components.indexing.shard_spec import parse_shard_spec
from dpr_components.pipeline_files.loading import load_pipeline


def add_shard_options(run: argparse.ArgumentParser) -> None:
    """``--shard`` and ``--shard-dir`` of ``haystack run``."""
    run.add_argument(
        "--shard",
        metavar="i/N",
        help="index only shard i of N of the corpus file (contiguous lines, about 1/N of its bytes), streaming it "
        "in chunks; 'auto' takes i and N from torchrun (RANK/WORLD_SIZE) or SLURM",
    )
    run.add_argument(
        "--shard-dir",
        metavar="DIR",
        help="with --shard: write the shard's embedded passages to DIR/shard-<i>-of-<N>/ instead of the pipeline's "
        "store; 'haystack merge-shards' writes the shards into one store",
    )


def add_merge_parser(
    commands: argparse._SubParsersAction, add_pipeline_options: Callable[[argparse.ArgumentParser], None]
) -> None:
    """Register ``merge-shards``."""
    merge = commands.add_parser(
        "merge-shards", help="write the shards of a sharded run (--shard-dir) into the store of an indexing pipeline"
    )
    merge.add_argument(
        "pipeline", help="indexing pipeline whose writer receives the passages, e.g. pipelines/index.yml"
    )
    merge.add_argument("shard_dir", help="the folder given as --shard-dir to the shard runs")
    merge.add_argument(
        "--batch-size", type=int, default=BATCH_PASSAGES, help=f"passages per write (default {BATCH_PASSAGES})"
    )
    merge.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_pipeline_options(merge)


def _report(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _corpus_input(inputs: dict[str, Any]) -> str:
    """Take the corpus path out of the nested inputs (the shard run gives the reader ``records``)."""
    paths = {component: values.pop("path") for component, values in inputs.items() if "path" in values}
    if any("records" in values for values in inputs.values()):
        raise ValueError("--shard reads a corpus file: give --input path=CORPUS, not records")
    if len(paths) != 1 or not isinstance(next(iter(paths.values())), str):
        raise ValueError("--shard needs the corpus file: --input path=CORPUS")
    return next(iter(paths.values()))


def command_run_shard(args: argparse.Namespace) -> int:
    """``haystack run PIPELINE --input path=CORPUS --shard i/N [--shard-dir DIR]``."""
    if args.shard is None:
        raise ValueError("--shard-dir needs --shard i/N (which shard this process indexes)")
    spec = parse_shard_spec(args.shard)
    if args.query is not None or args.batch:
        raise ValueError("--shard indexes a corpus file: --query and --batch do not apply")
    if args.shard_dir is not None and args.store is not None:
        raise ValueError(
            "--shard-dir writes the shard to its own folder, not to a store: drop --store (give it to merge-shards)"
        )
    pipeline = load_pipeline(args.pipeline, args.store, args.overrides, args.allow_network, require_stores=True)
    inputs = nest_inputs(pipeline, base_inputs(args, pipeline))
    corpus = _corpus_input(inputs)
    result = run_shard(
        pipeline,
        corpus,
        spec,
        args.shard_dir,
        {k: v for k, v in inputs.items() if v},
        run=lambda data: run_pipeline(pipeline, data),
        report=_report,
    )
    summary = {
        "shard": str(spec),
        "lines": list(result.lines),
        "documents": result.documents,
        "passages": result.passages,
        "folder": None if result.folder is None else str(result.folder),
    }
    where = f" -> {result.folder}" if result.folder is not None else ""
    print(
        json.dumps(summary)
        if args.json
        else f"shard {spec}: {result.documents:,} documents, {result.passages:,} passages{where}"
    )
    return 0


def command_merge_shards(args: argparse.Namespace) -> int:
    """``haystack merge-shards PIPELINE SHARD_DIR``: the shards into the store of PIPELINE's writer."""
    find_shards(args.shard_dir)  # a wrong shard folder is refused at once, before the pipeline loads
    pipeline = load_pipeline(args.pipeline, args.store, args.overrides, args.allow_network, require_stores=True)
    writers = [(name, c) for name, c in pipeline.walk() if type(c).__name__.endswith("Writer")]
    if len(writers) != 1:
        raise ValueError(
            f"{args.pipeline}: merge-shards writes through the pipeline's writer; it needs one, found {[n for n, _ in writers] or 'none'}"
        )
    result = merge_shards(args.shard_dir, writers[0][1], args.batch_size, report=_report)
    summary = {"shards": result.shards, "documents": result.documents, "passages": result.passages}
    print(
        json.dumps(summary)
        if args.json
        else f"merged {result.shards} shards: {result.documents:,} documents, {result.passages:,} passages"
    )
    return 0
