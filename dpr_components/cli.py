"""The ``haystack`` command: run, evaluate and tune YAML pipelines built from dpr_components.

    haystack run pipelines/search.yml --query "who wrote hamlet"
    haystack run pipelines/index.yml --input path=examples/corpus.jsonl
    haystack run pipelines/search.yml --batch questions.jsonl --json > results.jsonl
    haystack eval pipelines/bm25.yml pipelines/dense.yml pipelines/search.yml --questions dev.jsonl --out reports/nq
    haystack fit-lambda pipelines/search.yml --questions dev.jsonl --out reports/lambda
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")


def _add_pipeline_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", help="folder of the embedded document store (replaces the one in the YAML)")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="COMPONENT.PARAM=VALUE",
        help="override an init parameter, e.g. --set ranker.weight=20 or --set bm25.document_store.bm25_k1=1.2",
    )
    parser.add_argument(
        "--allow-network", action="store_true",
        help="also build components that may reach the network (remote stores, fetchers, generators) "
             "and read secrets from the environment; only for pipeline files you trust",
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="haystack", description="Run Haystack pipelines built from dpr_components.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run a YAML pipeline")
    run.add_argument("pipeline", help="pipeline YAML file")
    run.add_argument("--query", "-q", help="the question or search text (goes to every input named 'query')")
    run.add_argument("--input", "-i", action="append", default=[], metavar="NAME=VALUE",
                     help="a pipeline input: NAME or COMPONENT.NAME; VALUE is JSON if it parses, else text")
    run.add_argument("--inputs-file", help="JSON file with the pipeline inputs")
    run.add_argument("--batch", help="JSONL file: one query per line (text or an inputs object); one result per line")
    run.add_argument("--top-k", type=int, help="results to return (top_k of the pipeline's last components)")
    run.add_argument("--json", action="store_true", help="print JSON (one line per query) instead of tables")
    _add_pipeline_options(run)

    evaluate = commands.add_parser("eval", help="retrieval accuracy of pipelines on a question set")
    evaluate.add_argument("pipelines", nargs="+", help="pipeline YAML files to compare")
    evaluate.add_argument("--questions", required=True, help="question file: JSONL, DPR qa.csv/tsv, or a datasets source")
    evaluate.add_argument("--split", help="split of a datasets source (e.g. validation)")
    evaluate.add_argument("--limit", type=int, help="first N questions only")
    evaluate.add_argument("--match", choices=["string", "regex"], default="string", help="answer matching mode")
    evaluate.add_argument("--top-k", type=int, default=100, help="passages retrieved per question")
    evaluate.add_argument("--out", default="reports/eval", help="report folder (report.md, report.json, PNG)")
    _add_pipeline_options(evaluate)

    fit = commands.add_parser("fit-lambda", help="fit the HybridRanker weight λ on dev questions")
    fit.add_argument("pipeline", help="a pipeline with a HybridRanker fed by BM25Retriever and DenseRetriever")
    fit.add_argument("--questions", required=True)
    fit.add_argument("--split")
    fit.add_argument("--limit", type=int)
    fit.add_argument("--match", choices=["string", "regex"], default="string")
    fit.add_argument("--objective", default="1,5,20", help="k values whose mean top-k accuracy is maximised")
    fit.add_argument("--out", default="reports/lambda")
    _add_pipeline_options(fit)
    return parser


def _set_input(data: dict[str, Any], name: str, value: Any) -> None:
    if "." in name:
        component, socket = name.split(".", 1)
        data.setdefault(component, {})[socket] = value
    else:
        data[name] = value


def _leaf_components(pipeline: Any) -> list[str]:
    graph = pipeline.graph
    return [name for name in graph.nodes if graph.out_degree(name) == 0]


def _read_inputs_file(path: str) -> dict[str, Any]:
    """The JSON object of pipeline inputs in ``path``."""
    from dpr_components.output_files import describe_os_error
    from dpr_components.validation import strict_json_loads

    if Path(path).is_dir():
        raise ValueError(f"--inputs-file {path} is a directory, not a JSON file")
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as error:
        raise ValueError(f"--inputs-file {describe_os_error(error, path)}") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"--inputs-file {path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    try:
        loaded = strict_json_loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"--inputs-file {path}:{error.lineno}: invalid JSON ({error.msg} at column {error.colno})") from None
    except ValueError as error:
        raise ValueError(f"--inputs-file {path}: {error}") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"--inputs-file {path}: expected a JSON object of inputs, got {type(loaded).__name__}")
    return loaded


def _base_inputs(args: argparse.Namespace, pipeline: Any) -> dict[str, Any]:
    from dpr_components.pipeline_loading import parse_value

    data: dict[str, Any] = {}
    if args.inputs_file:
        data.update(_read_inputs_file(args.inputs_file))
    for item in args.input:
        if "=" not in item:
            raise ValueError(f"--input expects NAME=VALUE, got {item!r}")
        name, raw = item.split("=", 1)
        _set_input(data, name, parse_value(raw, f"--input {name}"))
    if args.top_k is not None:
        if args.top_k <= 0:
            raise ValueError(f"--top-k must be positive, got {args.top_k}")
        for leaf in _leaf_components(pipeline):
            if "top_k" in pipeline.inputs().get(leaf, {}):
                data.setdefault(leaf, {})["top_k"] = args.top_k
    return data


def _batch_item(text: str, where: str) -> dict[str, Any]:
    """One batch line as pipeline inputs: JSON (an object of inputs, or a quoted query) or plain query text."""
    from dpr_components.validation import strict_json_loads

    if not text.startswith(("{", "[", '"')):
        return {"query": text}
    try:
        item = strict_json_loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where}: invalid JSON ({error.msg} at column {error.colno})") from None
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    if isinstance(item, str):
        return {"query": item}
    if not isinstance(item, dict):
        raise ValueError(f"{where}: expected query text or a JSON object of inputs, got a JSON {type(item).__name__}")
    return item


def _batch_queries(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Numbered lines of a batch file; a line starting with ``{``, ``[`` or ``"`` is JSON, any other is query text."""
    from dpr_components.line_files import numbered_lines

    for number, line in numbered_lines(path, "--batch file"):
        text = line.strip()
        if text:
            yield number, _batch_item(text, f"{path}:{number}")


def nest_inputs(pipeline: Any, data: dict[str, Any]) -> dict[str, Any]:
    """Haystack takes inputs either all flat or all per component; accept a mix, flat names
    going to every component with an open input of that name."""
    inputs = pipeline.inputs()
    nested: dict[str, dict[str, Any]] = {}
    for key, value in data.items():
        if key in inputs and isinstance(value, dict):
            nested.setdefault(key, {}).update(value)
            continue
        receivers = [component for component, sockets in inputs.items() if key in sockets]
        if not receivers:
            open_inputs = sorted({name for sockets in inputs.values() for name in sockets})
            raise ValueError(f"the pipeline has no input named {key!r}; its inputs are {open_inputs}")
        for component in receivers:
            nested.setdefault(component, {}).setdefault(key, value)
    return nested


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key].update(value)
        else:
            merged[key] = value
    return merged


def _user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that describe a mistake in the input, printed as one line; anything else is a bug and surfaces."""
    from haystack.document_stores.errors import DocumentStoreError
    from haystack.errors import FilterError

    return (ValueError, FilterError, DocumentStoreError, OSError)


def one_line(error: BaseException) -> str:
    """The message of a user error on one line (an ``OSError`` says which file)."""
    from dpr_components.output_files import describe_os_error

    if isinstance(error, OSError):
        return describe_os_error(error)
    return " ".join(str(error).split()) or type(error).__name__


def command_run(args: argparse.Namespace) -> int:
    from dpr_components.output_format import printable, result_text, to_json_line
    from dpr_components.pipeline_loading import load_pipeline

    pipeline = load_pipeline(args.pipeline, args.store, args.overrides, args.allow_network, require_stores=True)
    base = _base_inputs(args, pipeline)
    if args.batch:
        if args.query:
            raise ValueError("give either --query or --batch, not both")
        for number, item in _batch_queries(args.batch):
            try:
                result = run_pipeline(pipeline, _merge(base, item))
            except _user_errors() as error:
                raise ValueError(f"{args.batch}:{number}: {one_line(error)}") from None
            print(to_json_line({"line": number, **item, "result": result}) if args.json else
                  f"== {printable(str(item.get('query', item)))}\n{result_text(result)}", flush=True)
        return 0
    if args.query is not None:
        base["query"] = args.query
    if not base:
        raise ValueError("no inputs: give --query, --input NAME=VALUE, --inputs-file or --batch")
    result = run_pipeline(pipeline, base)
    print(to_json_line(result) if args.json else result_text(result))
    return 0


def check_inputs(pipeline: Any, nested: dict[str, dict[str, Any]]) -> None:
    """Every input value against the type of the socket it goes to (Haystack does not check them)."""
    from dpr_components.type_checks import type_mismatch

    sockets = pipeline.inputs(include_components_with_connected_inputs=True)
    for component, values in nested.items():
        for name, value in values.items():
            socket = sockets.get(component, {}).get(name)
            problem = type_mismatch(value, socket["type"], check_classes=True) if socket else None
            if problem:
                raise ValueError(f"input {component}.{name}: {problem}")


def run_pipeline(pipeline: Any, data: dict[str, Any], **options: Any) -> dict[str, Any]:
    """``Pipeline.run`` with inputs checked first and the component's own error surfaced instead of Haystack's wrapper."""
    nested = nest_inputs(pipeline, data)
    check_inputs(pipeline, nested)
    try:
        return pipeline.run(nested, **options)
    except Exception as error:
        # The outermost user error (under Haystack's wrapper, if any): it may itself wrap a library's error.
        cause: BaseException | None = error
        while cause is not None and not isinstance(cause, _user_errors()):
            cause = cause.__cause__
        if cause is not None and cause is not error:
            raise cause from None
        raise


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    args.command_line = "haystack " + shlex.join(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "run":
            return command_run(args)
        if args.command == "eval":
            from dpr_components.evaluation.run_eval import command_eval

            return command_eval(args)
        if args.command == "fit-lambda":
            from dpr_components.hybrid_fit import command_fit_lambda

            return command_fit_lambda(args)
    except _user_errors() as error:
        print(f"error: {one_line(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 1


if __name__ == "__main__":
    sys.exit(main())
