"""Sharded indexing on the command line: ``haystack run ... --shard i/N`` and ``haystack merge-shards``.

haystack run pipelines/index.yml --input path=psgs_w100.tsv --shard 3/16 --shard-dir shards
haystack merge-shards pipelines/index.yml shards --store indexes/wiki
haystack index-ray pipelines/index.yml --input path=psgs_w100.tsv --shards 16 --shard-dir shards --store indexes/wiki
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from dpr_components.cli.output_format import report_line
from dpr_components.cli.run_inputs import base_inputs
from dpr_components.index_runs.corpus_split import split_corpus
from dpr_components.index_runs.ray_sharding import (
    RaySettings,
    ShardJob,
    ShardOutcome,
    encode_shard,
    index_on_ray,
)
from dpr_components.index_runs.shard_check import find_shards
from dpr_components.index_runs.shard_merge import MergeResult, merge_shards
from dpr_components.index_runs.shard_run import run_shard
from dpr_components.index_runs.shard_spec import ShardSpec, parse_shard_spec
from dpr_components.pipeline_files.loading import load_pipeline, load_pipeline_spec, writes_documents
from dpr_components.pipeline_requests.inputs import request_inputs
from dpr_components.pipeline_requests.running import run_pipeline
from dpr_components.utils.input_files import check_input_path
from dpr_components.utils.output_folders import SHARDS, check_output_folder


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
    if args.shard_dir is not None:  # refused before the pipeline loads its models
        check_output_folder(args.shard_dir, SHARDS, replace=False, hint="choose another folder for the shards")
    pipeline = load_pipeline(args.pipeline, args.store, args.overrides, args.allow_network, require_stores=True)
    inputs = request_inputs(pipeline, top_k=args.top_k, other=base_inputs(args))
    corpus = _corpus_input(inputs)
    result = run_shard(
        pipeline,
        corpus,
        spec,
        args.shard_dir,
        {k: v for k, v in inputs.items() if v},
        run=lambda data: run_pipeline(pipeline, data),
        report=report_line,
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
    _print_merge(args, _merge(args))
    return 0


def _merge(args: argparse.Namespace) -> MergeResult:
    """The shards in ``args.shard_dir`` into the store of ``args.pipeline``'s writer."""
    if not writes_documents(load_pipeline_spec(args.pipeline)["components"]):  # checked before any store is opened
        raise ValueError(
            f"{args.pipeline}: merge-shards writes through the pipeline's writer; it has none (use index.yml)"
        )
    pipeline = load_pipeline(args.pipeline, args.store, args.overrides, args.allow_network, require_stores=True)
    writers = [(name, c) for name, c in pipeline.walk() if type(c).__name__.endswith("Writer")]
    if len(writers) != 1:
        raise ValueError(
            f"{args.pipeline}: merge-shards writes through the pipeline's writer; it needs one, found {[n for n, _ in writers] or 'none'}"
        )
    return merge_shards(args.shard_dir, writers[0][1], args.batch_size, report=report_line)


def _print_merge(args: argparse.Namespace, result: MergeResult) -> None:
    summary = {"shards": result.shards, "documents": result.documents, "passages": result.passages}
    print(
        json.dumps(summary)
        if args.json
        else f"merged {result.shards} shards: {result.documents:,} documents, {result.passages:,} passages"
    )


def command_index_ray(args: argparse.Namespace) -> int:
    """``haystack index-ray PIPELINE --input path=CORPUS --shards N --shard-dir DIR``: shards on Ray, then the merge."""
    for name in ("shards", "workers", "threads"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ValueError(f"--{name} must be at least 1, got {value}")
    if args.max_retries < 0:
        raise ValueError(f"--max-retries must be 0 or more, got {args.max_retries}")
    spec = ShardSpec(args.shards, args.shards)  # checks N against the shard limit
    check_output_folder(args.shard_dir, SHARDS, replace=False, hint="choose another folder for the shards")
    inputs = base_inputs(argparse.Namespace(inputs_file=None, input=args.input))
    flat = {k: v for k, v in inputs.items() if not isinstance(v, dict)}
    per_component = {k: v for k, v in inputs.items() if isinstance(v, dict)}
    corpus = _corpus_input({"": flat, **per_component})  # "": the inputs of every component
    split = split_corpus(check_input_path(corpus, "corpus file"), spec.count)
    if spec.count > split.lines:
        raise ValueError(f"--shards {spec.count:,}: {corpus} has {split.lines:,} lines; give N at most its line count")
    job = ShardJob(
        pipeline=str(Path(args.pipeline).resolve()),
        corpus=str(Path(corpus).resolve()),
        count=spec.count,
        shard_dir=str(Path(args.shard_dir).resolve()),
        overrides=tuple(args.overrides),
        allow_network=args.allow_network,
        inputs={**flat, **{k: v for k, v in per_component.items() if v}},
        threads=args.threads,
    )
    index_on_ray(job, RaySettings(args.address, args.workers, args.max_retries), encode_command_shard, report_line)
    _print_merge(args, _merge(args))
    return 0


def encode_command_shard(job: ShardJob, index: int) -> ShardOutcome:
    """One shard of ``index-ray`` in a Ray worker, run as ``haystack run --shard i/N --shard-dir`` runs it."""
    return encode_shard(job, index, run_pipeline)
