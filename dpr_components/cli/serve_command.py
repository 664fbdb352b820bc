"""``haystack serve``'s options, read into a ``ServerPolicy`` and thread settings, then the server run
(``dpr_components.serving``; docs/serving.md).

Its security model (origins, Host names, API key, body size, logs, training) is in
``dpr_components/serving/security.py``."""

from __future__ import annotations

import argparse
import importlib.util
import os
from pathlib import Path

from dpr_components.cli.option_bounds import BODY_BOUND, PORT_BOUND, RUNS_PER_CORE, option_number
from dpr_components.serving.run_queues import WRITE_QUEUES
from dpr_components.serving.security import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_UPLOAD_BYTES,
    ServerPolicy,
    check_bind_address,
    normalize_host_name,
    normalize_origin,
    read_api_key,
)
from dpr_components.serving.server import prepare_input_root, serve
from dpr_components.serving.store_folders import StoreFolders
from dpr_components.utils.knobs import check_option
from dpr_components.utils.threads import (
    DEFAULT_QUERY_THREADS,
    QUERY_THREADS_ENV,
    check_thread_variables,
    query_threads,
    thread_bound,
)

DEFAULT_INPUT_ROOT = "served"


def add_serve_parser(commands: argparse._SubParsersAction) -> None:
    """Register ``serve`` and its options."""
    serve = commands.add_parser("serve", help="serve every pipeline of a folder over HTTP with hayhooks")
    serve.add_argument(
        "--pipelines-dir",
        help="folder of YAML pipelines (default: ./pipelines when that folder exists, else the packaged pipelines)",
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1, this machine only); any other needs --api-key-env "
        "or --insecure-no-auth",
    )
    serve.add_argument("--port", type=option_number, default=1416, help="port (default: 1416)")
    serve.add_argument(
        "--store",
        action="append",
        default=[],
        metavar="[PIPELINE=]DIR",
        help="serve the pipelines over this store folder instead of their own (one made by haystack run index "
        "--store DIR, an empty or a new folder); PIPELINE=DIR for one served pipeline only; repeatable. A store "
        "not indexed yet is served too: its searches answer 503 until an index request fills it",
    )
    serve.add_argument(
        "--input-root",
        default=DEFAULT_INPUT_ROOT,
        help="the only folder whose files requests may name as inputs (corpus path, training data); "
        f"created if missing (default: {DEFAULT_INPUT_ROOT})",
    )
    _add_security_options(serve)
    serve.add_argument(
        "--log-queries",
        action="store_true",
        help="log the inputs of every request (query text, records); off by default",
    )
    serve.add_argument(
        "--enable-training", action="store_true", help="serve pipelines that train a model (train_dpr); off by default"
    )
    serve.add_argument(
        "--query-threads",
        type=option_number,
        metavar="N",
        help=f"torch and FAISS threads for each request's question and the passages it reads (sets {QUERY_THREADS_ENV}; default: "
        f"${QUERY_THREADS_ENV} or {DEFAULT_QUERY_THREADS}; at most the usable cores); requests run side by side in a thread "
        "pool (docs/threads.md)",
    )
    serve.add_argument(
        "--concurrent-runs",
        type=option_number,
        metavar="N",
        help="pipeline runs at once; more requests wait their turn, first come first served (default: the "
        "number of cores divided by the query threads, so that requests do not share cores and all finish late; "
        f"at most {RUNS_PER_CORE} per core); the index route's runs wait in a queue of their own (--write-queue)",
    )
    serve.add_argument(
        "--write-queue",
        choices=WRITE_QUEUES,
        default="own",
        help="where the index route's runs wait: 'own' (default), one at a time beside the searches, or 'shared'",
    )


def _add_security_options(serve: argparse.ArgumentParser) -> None:
    """Who may call the server and what it accepts (README.md, section "Server security")."""
    serve.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="require 'Authorization: Bearer KEY' on every route but GET /status, KEY being the value of "
        "environment variable NAME (at least 16 characters; never give the key itself on the command line)",
    )
    serve.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="allow a non-loopback --host without an API key: anyone who reaches the port can search and change the store",
    )
    serve.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web origin (scheme://host[:port]) whose pages may call the server; repeatable. "
        "Without it, requests from web pages are refused",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name clients use to reach the server, besides localhost, 127.0.0.1, ::1 and --host; repeatable "
        "(requests naming another host are refused: DNS rebinding)",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=option_number,
        default=DEFAULT_MAX_BODY_BYTES,
        help=f"largest request body accepted, in bytes (default: {DEFAULT_MAX_BODY_BYTES:,}; at most 1 GiB); "
        "larger ones get 413",
    )
    serve.add_argument(
        "--max-upload-bytes",
        type=option_number,
        default=DEFAULT_MAX_UPLOAD_BYTES,
        help=f"largest file upload accepted by the index routes (POST /index/run, multipart/form-data), in bytes "
        f"(default: {DEFAULT_MAX_UPLOAD_BYTES:,}; at most 1 GiB); larger ones get 413",
    )


def apply_thread_settings(args: argparse.Namespace) -> int:
    """Set ``$DPR_QUERY_THREADS`` from ``--query-threads`` (when given) and return the count requests use;
    a bad option or thread variable is refused here, before serving."""
    if args.query_threads is not None:
        args.query_threads = check_option("--query-threads", args.query_threads, thread_bound())
        os.environ[QUERY_THREADS_ENV] = str(args.query_threads)
    check_thread_variables()
    return query_threads()


def server_policy(args: argparse.Namespace) -> ServerPolicy:
    """The ``ServerPolicy`` the options ask for; ``ValueError`` names the option that is wrong."""
    args.port = check_option("--port", args.port, PORT_BOUND)
    args.max_body_bytes = check_option("--max-body-bytes", args.max_body_bytes, BODY_BOUND)
    args.max_upload_bytes = check_option("--max-upload-bytes", args.max_upload_bytes, BODY_BOUND)
    api_key = read_api_key(args.api_key_env) if args.api_key_env else None
    check_bind_address(args.host, api_key is not None, args.insecure_no_auth)
    return ServerPolicy(
        host=args.host,
        cors_origins=tuple(normalize_origin(origin) for origin in args.cors_origin),
        allowed_hosts=tuple(normalize_host_name(name) for name in args.allowed_host),
        api_key=api_key,
        max_body_bytes=args.max_body_bytes,
        max_upload_bytes=args.max_upload_bytes,
        log_queries=args.log_queries,
        enable_training=args.enable_training,
    )


def check_serve_extra() -> None:
    """``haystack serve`` needs hayhooks and uvicorn, which the ``serve`` extra installs; one line if missing."""
    for module in ("hayhooks", "uvicorn"):
        if importlib.util.find_spec(module) is None:
            raise ValueError(
                f"haystack serve needs {module}, which it installs with: pip install 'dpr-components[serve]'"
            )


def command_serve(args: argparse.Namespace) -> int:
    """Check the options, then serve until interrupted."""
    check_serve_extra()
    policy = server_policy(args)
    threads = apply_thread_settings(args)
    root = prepare_input_root(Path(args.input_root))
    stores = StoreFolders.parse(args.store)
    serve(args.pipelines_dir, policy, args.port, root, threads, args.concurrent_runs, stores, args.write_queue)
    return 0
