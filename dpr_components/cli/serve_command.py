"""``haystack serve``: every pipeline of a folder as an HTTP endpoint (hayhooks), ``POST /{name}/run``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEFAULT_INPUT_ROOT = "served"


def add_serve_parser(commands: argparse._SubParsersAction) -> None:
    """Register ``serve`` and its options."""
    serve = commands.add_parser("serve", help="serve every pipeline of a folder over HTTP with hayhooks")
    serve.add_argument("--pipelines-dir", default="pipelines", help="folder of YAML pipelines (default: pipelines)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=1416, help="port (default: 1416)")
    serve.add_argument(
        "--input-root", default=DEFAULT_INPUT_ROOT,
        help="the only folder whose files requests may name as inputs (corpus path, training data); "
             f"created if missing (default: {DEFAULT_INPUT_ROOT})",
    )


def command_serve(args: argparse.Namespace) -> int:
    """Build the app, say what is served, then run it with uvicorn until interrupted."""
    if not 0 < args.port < 65536:
        raise ValueError(f"--port must be between 1 and 65535, got {args.port}")
    root = Path(args.input_root)
    if root.exists() and not root.is_dir():
        raise ValueError(f"--input-root {root} exists and is not a folder")
    root.mkdir(parents=True, exist_ok=True)

    import uvicorn

    from dpr_components.cli.serving import build_app

    app, served = build_app(args.pipelines_dir, input_root=root)
    for name, reason in served.skipped.items():
        print(f"not served: {name}: {reason}", file=sys.stderr)
    print(f"serving {', '.join(served.deployed)} on http://{args.host}:{args.port} "
          f"(POST /NAME/run; input files only from {root.resolve()})", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_config=None)
    return 0
