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
haystack export-st models/dpr-minilm-multi st-question --role question
haystack export-qa models/reader-minilm qa-reader
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import shlex
import sys
from collections.abc import Iterator

from dpr_components.cli.batch_lines import batch_queries
from dpr_components.cli.option_bounds import check_settings, option_number
from dpr_components.cli.output_format import printable, result_text, to_json_line
from dpr_components.cli.run_inputs import base_inputs, merge_inputs
from dpr_components.cli.serve_command import add_serve_parser, command_serve
from dpr_components.cli.shard_command import (
    add_merge_parser,
    add_ray_parser,
    add_shard_options,
    command_index_ray,
    command_merge_shards,
    command_run_shard,
)
from dpr_components.evaluation.interval_options import add_interval_options
from dpr_components.export.command import add_export_parsers, command_export
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.pipeline_requests.errors import one_line, quiet_retry_logs, user_error_cause, user_errors
from dpr_components.pipeline_requests.inputs import request_inputs
from dpr_components.pipeline_requests.running import run_pipeline


def _add_pipeline_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", help="folder of the embedded document store (replaces the one in the YAML)")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="COMPONENT.PARAM=VALUE",
        help="override an init parameter, e.g. --set ranker.weight=20 or --set bm25.document_store.bm25_k1=1.2",
    )
    parser.add_argument(
        "--allow-network",
        action="store_true",
        help="also build components that may reach the network (remote stores, fetchers, generators) "
        "and read secrets from the environment; only for pipeline files you trust",
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="haystack", description="Run Haystack pipelines built from dpr_components.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    commands = parser.add_subparsers(dest="command", required=True)

    _add_run_parser(commands)
    _add_eval_parser(commands)
    _add_fit_parser(commands)
    add_serve_parser(commands)
    add_merge_parser(commands, _add_pipeline_options)
    add_ray_parser(commands, _add_pipeline_options)
    add_export_parsers(commands)
    return parser


def _add_run_parser(commands: argparse._SubParsersAction) -> None:
    """``haystack run``."""
    run = commands.add_parser("run", help="run a YAML pipeline")
    run.add_argument("pipeline", help="pipeline YAML file")
    run.add_argument("--query", "-q", help="the question or search text (goes to every input named 'query')")
    run.add_argument(
        "--input",
        "-i",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a pipeline input: NAME or COMPONENT.NAME; VALUE is JSON if it parses, else text",
    )
    run.add_argument("--inputs-file", help="JSON file with the pipeline inputs")
    run.add_argument("--batch", help="JSONL file: one query per line (text or an inputs object); one result per line")
    run.add_argument("--top-k", type=option_number, help="results to return (top_k of the pipeline's last components)")
    run.add_argument("--json", action="store_true", help="print JSON (one line per query) instead of tables")
    add_shard_options(run)
    _add_pipeline_options(run)


def _add_eval_parser(commands: argparse._SubParsersAction) -> None:
    """``haystack eval``."""
    evaluate = commands.add_parser(
        "eval", help="score pipelines on a question set with an evaluation pipeline (e.g. pipelines/eval_nq.yml)"
    )
    evaluate.add_argument(
        "pipelines",
        nargs="+",
        help="pipeline YAML files: at most one evaluation pipeline (all evaluators; default: retrieval accuracy "
        "and exact match) and the systems to compare (default: the evaluation pipeline's metadata.evaluation.systems)",
    )
    evaluate.add_argument(
        "--questions",
        help="question file: JSONL, DPR qa.csv/tsv, or a datasets source "
        "(default: the evaluation pipeline's metadata.evaluation.questions)",
    )
    evaluate.add_argument("--split", help="split of a datasets source (e.g. validation)")
    evaluate.add_argument("--limit", type=option_number, help="first N questions only")
    evaluate.add_argument(
        "--match",
        choices=["string", "regex", "gold"],
        help="answer matching mode (default: the evaluator's, else string); 'gold': a passage hits when cut from "
        "one of the question's gold_ids documents (the selection splits; questions without gold_ids are left out)",
    )
    evaluate.add_argument(
        "--top-k",
        type=option_number,
        help="passages retrieved per question (default: metadata.evaluation.top_k, else 100)",
    )
    evaluate.add_argument("--out", default="reports/eval", help="report folder (report.md, report.json, PNG)")
    add_interval_options(evaluate)
    _add_pipeline_options(evaluate)


def _add_fit_parser(commands: argparse._SubParsersAction) -> None:
    """``haystack fit-lambda``."""
    fit = commands.add_parser("fit-lambda", help="fit the HybridRanker weight λ on dev questions")
    fit.add_argument("pipeline", help="a pipeline with a HybridRanker fed by BM25Retriever and DenseRetriever")
    fit.add_argument("--questions", required=True)
    fit.add_argument("--split")
    fit.add_argument("--limit", type=option_number)
    fit.add_argument(
        "--match",
        choices=["string", "regex", "gold"],
        default="string",
        help="answer matching (default string); gold: passages of the questions' gold_ids documents (selection splits)",
    )
    fit.add_argument("--objective", default="1,5,20", help="k values whose mean top-k accuracy is maximised")
    fit.add_argument("--out", default="reports/lambda")
    _add_pipeline_options(fit)


def command_run(args: argparse.Namespace) -> int:
    """``haystack run``: one request, or one per line of a ``--batch`` file; each placed in the pipeline
    by :func:`request_inputs`, as the server and the LangChain retriever place theirs."""
    pipeline = load_pipeline(args.pipeline, args.store, args.overrides, args.allow_network, require_stores=True)
    base = base_inputs(args)
    if args.batch:
        if args.query:
            raise ValueError("give either --query or --batch, not both")
        for number, item in batch_queries(args.batch):
            try:
                inputs = request_inputs(pipeline, top_k=args.top_k, other=merge_inputs(base, item))
                result = run_pipeline(pipeline, inputs)
            except user_errors() as error:
                raise ValueError(f"{args.batch}:{number}: {one_line(error)}") from None
            print(
                to_json_line({"line": number, **item, "result": result})
                if args.json
                else f"== {printable(str(item.get('query', item)))}\n{result_text(result)}",
                flush=True,
            )
        return 0
    inputs = request_inputs(pipeline, query=args.query, top_k=args.top_k, other=base)
    if not inputs:
        raise ValueError("no inputs: give --query, --input NAME=VALUE, --inputs-file or --batch")
    result = run_pipeline(pipeline, inputs)
    print(to_json_line(result) if args.json else result_text(result))
    return 0


@contextlib.contextmanager
def ending_process() -> Iterator[None]:
    """For a process that ends when the block does: the objects that exist on entry (imports) are
    frozen out of the garbage collector and, on exit, what the block left is collected (closing its
    stores) and frozen too. The interpreter's shutdown then no longer traverses every object: without
    this a one-question ``haystack run`` takes about 1.4x the CPU time, a second more
    (docs/benchmarks/first_answer.md)."""
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
    args = _build_parser().parse_args(argv)
    args.command_line = "haystack " + shlex.join(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    quiet_retry_logs(args.verbose)
    try:
        check_settings(args)  # every command, before anything heavy loads
        if args.command == "run":
            return (
                command_run_shard(args) if args.shard is not None or args.shard_dir is not None else command_run(args)
            )
        if args.command == "merge-shards":
            return command_merge_shards(args)
        if args.command == "index-ray":
            return command_index_ray(args)
        # Imported on use: a plain `haystack run` should not pay for the evaluation stack (pandas, plots).
        if args.command == "eval":
            from dpr_components.cli.eval_command import command_eval

            return command_eval(args)
        if args.command == "fit-lambda":
            from dpr_components.cli.fit_lambda import command_fit_lambda

            return command_fit_lambda(args)
        if args.command == "serve":
            return command_serve(args)
        if args.command in ("export-st", "export-qa"):
            return command_export(args)
    except Exception as error:
        # A user error may arrive wrapped (an evaluation pipeline run by the library, not by run_pipeline).
        cause = user_error_cause(error)
        if cause is None:
            raise
        print(f"error: {one_line(cause)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 1
