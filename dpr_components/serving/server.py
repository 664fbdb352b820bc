"""Run ``haystack serve``: the folder to serve, the app built, a line saying what is served and to whom,
then uvicorn until interrupted."""

from __future__ import annotations

import sys
from pathlib import Path

from dpr_components.serving.run_queues import WriteQueue
from dpr_components.serving.security import ServerPolicy, is_loopback
from dpr_components.serving.store_folders import StoreFolders
from dpr_components.utils.threads import default_concurrent_runs


def describe_policy(policy: ServerPolicy) -> str:
    """What the policy lets in, for the startup line."""
    parts = ["API key required" if policy.api_key else "no API key"]
    if not policy.api_key and not is_loopback(policy.host):
        parts.append("INSECURE: open to anyone who reaches the port")
    parts.append(f"web origins: {', '.join(policy.cors_origins) or 'none'}")
    parts.append(f"Host names: {', '.join(sorted(policy.host_names()))}")
    parts.append(f"bodies up to {policy.max_body_bytes:,} bytes, uploads up to {policy.max_upload_bytes:,}")
    parts.append("training on" if policy.enable_training else "training off")
    return "; ".join(parts)


def default_pipelines_dir(given: str | None) -> Path:
    """The folder to serve: the one given, else ``./pipelines`` when it exists (a clone or a project of
    the user's own), else the pipelines installed with the package."""
    from dpr_components.packaged import PIPELINES_DIR

    if given is not None:
        return Path(given)
    local = Path("pipelines")
    return local if local.is_dir() else PIPELINES_DIR


def prepare_input_root(root: Path, option: str = "--input-root") -> Path:
    """``root``, created if missing; a file of that name is refused."""
    if root.exists() and not root.is_dir():
        raise ValueError(f"{option} {root} exists and is not a folder")
    root.mkdir(parents=True, exist_ok=True)
    return root


def serve(
    pipelines_dir: str | None,
    policy: ServerPolicy,
    port: int,
    input_root: Path,
    threads: int,
    concurrent_runs: int | None = None,
    stores: StoreFolders | None = None,
    write_queue: WriteQueue = "own",
) -> None:
    """Build the app, say what is served, then run it with uvicorn on ``policy.host`` until interrupted."""
    import uvicorn

    from dpr_components.serving.allocator import hold_malloc_thresholds, start_memory_release
    from dpr_components.serving.app import build_app

    hold_malloc_thresholds()  # before the models load: their freed buffers would raise the thresholds
    folder = default_pipelines_dir(pipelines_dir)
    print(f"pipelines from {folder}", file=sys.stderr)
    app, served = build_app(
        folder,
        input_root=input_root,
        policy=policy,
        concurrent_runs=concurrent_runs,
        stores=stores,
        write_queue=write_queue,
    )
    for name, reason in served.skipped.items():
        print(f"not served: {name}: {reason}", file=sys.stderr)
    print(
        f"serving {', '.join(served.deployed)} on http://{policy.host}:{port} "
        f"(POST /NAME/run, the ask page at /; input files only from {input_root.resolve()}; "
        f"{describe_policy(policy)}; {threads} thread(s) per question, "
        f"{concurrent_runs or default_concurrent_runs()} run(s) at once, "
        f"{'writes in the same queue' if write_queue == 'shared' else 'writes in a queue of their own'})",
        file=sys.stderr,
        flush=True,
    )
    start_memory_release()
    uvicorn.run(app, host=policy.host, port=port, log_config=None, server_header=False)
