"""The ``haystack`` command's arguments: every subcommand's options, and nothing that loads Haystack,
torch or FAISS, so that ``haystack --help`` and a mistyped option answer at once (the commands
themselves are imported by ``main`` once the arguments are parsed)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from dpr_components.cli.option_bounds import option_number
from dpr_components.cli.serve_command import add_serve_parser
from dpr_components.evaluation.interval_options import add_interval_options
from dpr_components.export.command import add_export_parsers
from dpr_components.index_runs.shard_spec import BATCH_PASSAGES, MAX_RETRIES

SHARD_HELP = (
    "index only shard i of N of the corpus file (contiguous lines, about 1/N of its bytes), streaming it "
    "in chunks; 'auto' takes i and N from torchrun (RANK/WORLD_SIZE) or SLURM"
)
SHARD_DIR_HELP = (
    "with --shard: write the shard's embedded passages to DIR/shard-<i>-of-<N>/ instead of the pipeline's "
    "store; 'haystack merge-shards' writes the shards into one store"
)


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


def build_parser() -> argparse.ArgumentParser:
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
    run.add_argument(
        "--keep-removed",
        action="store_true",
        help="index_files: keep the passages of files gone from the folder (the input keep_removed=true)",
    )
    _add_adapt_options(run)
    add_shard_options(run)
    _add_pipeline_options(run)


def _add_adapt_options(run: argparse.ArgumentParser) -> None:
    """``--out``, ``--max-minutes`` and ``--max-passages`` of ``haystack run`` (adapt, train_dpr)."""
    run.add_argument("--out", metavar="DIR", help="the run folder of a training pipeline (the input output_dir)")
    run.add_argument(
        "--max-minutes",
        type=float,
        metavar="M",
        help="adapt: stop after M minutes with a checkpoint and the encoder so far (the input max_minutes)",
    )
    run.add_argument(
        "--max-passages",
        type=option_number,
        metavar="N",
        help="adapt: at most N passages give a pseudo-query (the input max_passages)",
    )


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


def add_shard_options(run: argparse.ArgumentParser) -> None:
    """``--shard`` and ``--shard-dir`` of ``haystack run``."""
    run.add_argument("--shard", metavar="i/N", help=SHARD_HELP)
    run.add_argument("--shard-dir", metavar="DIR", help=SHARD_DIR_HELP)


def _add_merge_output_options(parser: argparse.ArgumentParser, batch: str, summary: str) -> None:
    """``--batch-size`` (the merge's passages per write, described as ``batch``) and ``--json`` (``summary`` as JSON)."""
    parser.add_argument(
        "--batch-size", type=option_number, default=BATCH_PASSAGES, help=f"{batch} (default {BATCH_PASSAGES})"
    )
    parser.add_argument("--json", action="store_true", help=f"print {summary} as JSON")


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
    _add_merge_output_options(merge, "passages per write", "the summary")
    add_pipeline_options(merge)


def add_ray_parser(
    commands: argparse._SubParsersAction, add_pipeline_options: Callable[[argparse.ArgumentParser], None]
) -> None:
    """Register ``index-ray``."""
    index = commands.add_parser(
        "index-ray",
        help="index a corpus file in N shards as Ray tasks (each one 'run --shard i/N --shard-dir'), then merge-shards",
    )
    index.add_argument("pipeline", help="indexing pipeline, e.g. pipelines/index.yml")
    index.add_argument(
        "--input", "-i", action="append", default=[], metavar="NAME=VALUE", help="pipeline inputs: path=CORPUS"
    )
    index.add_argument(
        "--shards", type=option_number, required=True, metavar="N", help="shards to cut the corpus file into"
    )
    index.add_argument("--shard-dir", required=True, metavar="DIR", help="folder of the shard folders (kept)")
    index.add_argument(
        "--address", help="Ray cluster to join: auto or ray://HOST:10001 (default: start Ray on this machine)"
    )
    index.add_argument(
        "--workers", type=option_number, help="shards encoded at once (default: as many as the CPUs allow)"
    )
    index.add_argument(
        "--threads", type=option_number, default=1, help="CPUs (torch threads) per shard task (default 1)"
    )
    index.add_argument(
        "--max-retries",
        type=option_number,
        default=MAX_RETRIES,
        help=f"retries of a shard whose worker died or hit an OSError (default {MAX_RETRIES})",
    )
    _add_merge_output_options(index, "passages per write of the merge", "the merge summary")
    add_pipeline_options(index)
