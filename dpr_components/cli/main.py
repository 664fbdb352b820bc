"""The ``haystack`` command: run, evaluate and tune YAML pipelines built from dpr_components.

haystack run pipelines/search.yml --query "who wrote hamlet"
haystack run pipelines/index.yml --input path=examples/corpus.jsonl
haystack run pipelines/search.yml --batch questions.jsonl --json > results.jsonl
haystack eval pipelines/eval_nq.yml --store indexes/pool --out reports/nq
haystack eval pipelines/bm25.yml pipelines/dense.yml pipelines/search.yml --questions dev.jsonl --out reports/nq
haystack fit-lambda pipelines/search.yml --questions dev.jsonl --out reports/lambda
haystack serve --pipelines-dir pipelines --port 1416
haystack run pipelines/index.yml --input path=psgs_w100.tsv --shard 3/16 --shard-dir shards
haystack merge-shards pipelines/index.yml shards --store indexes/wiki
haystack export-st bundled:dpr-minilm-multi st-question --role question
haystack export-qa bundled:reader-minilm qa-reader
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import shlex
import sys
from collections.abc import Iterator

from dpr_components.cli.arguments import build_parser
from dpr_components.cli.option_bounds import check_settings


@contextlib.contextmanager
def ending_process() -> Iterator[None]:
    """For a process that ends when the block does: the objects that exist on entry (imports) are
    frozen out of the garbage collector and, on exit, what the block left is collected (closing its
    stores) and frozen too. The interpreter's shutdown then no longer traverses every object: without
    this a one-question ``haystack run`` takes about 1.4x the CPU time, a second more
    (docs/benchmarks/cli/first_answer.md)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.collect()
        gc.freeze()


def main(argv: list[str] | None = None) -> int:
    """Run the ``haystack`` command; the exit code is 0, 2 for a user error, 130 when interrupted.
    Called without ``argv`` (as the command), the process is expected to end right after."""
    if argv is not None:
        return _run(argv)
    with ending_process():
        return _run(None)


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    args.command_line = "haystack " + shlex.join(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    # Which back end encodes the passages is worth one line on every run that indexes.
    logging.getLogger("dpr_components.encoders.backend_choice").setLevel(logging.INFO)
    try:
        check_settings(args)  # every command, before anything heavy loads
    except ValueError as error:
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    from dpr_components.pipeline_requests.errors import quiet_retry_logs, user_error

    quiet_retry_logs(args.verbose)
    try:
        return _dispatch(args)
    except Exception as error:
        # A user error may arrive wrapped (an evaluation pipeline run by the library, not by run_pipeline).
        found = user_error(error)
        if found is None:
            raise
        print(f"error: {found.line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command ``args`` names. Each is imported here, once the arguments are known to be right:
    ``haystack --help`` loads none of them, and ``haystack run`` not the evaluation stack."""
    if args.command == "run":
        if args.shard is not None or args.shard_dir is not None:
            from dpr_components.cli.shard_command import command_run_shard

            return command_run_shard(args)
        from dpr_components.cli.run_command import command_run

        return command_run(args)
    if args.command in ("merge-shards", "index-ray"):
        from dpr_components.cli.shard_command import command_index_ray, command_merge_shards

        return command_merge_shards(args) if args.command == "merge-shards" else command_index_ray(args)
    if args.command == "eval":
        from dpr_components.cli.eval_command import command_eval

        return command_eval(args)
    if args.command == "fit-lambda":
        from dpr_components.cli.fit_lambda import command_fit_lambda

        return command_fit_lambda(args)
    if args.command == "serve":
        from dpr_components.cli.serve_command import command_serve

        return command_serve(args)
    from dpr_components.export.command import command_export

    return command_export(args)
