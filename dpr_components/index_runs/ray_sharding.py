"""Sharded indexing on Ray: one task per shard, failed shards retried, finished shards kept.

Each task encodes shard ``i/N`` as ``haystack run PIPELINE --shard i/N --shard-dir DIR`` does
(:func:`encode_shard` calls the same :func:`run_shard` and writes the same shard folder); the
caller then merges the folder with the checked merge (``haystack merge-shards``).

- A shard whose folder already holds a complete shard of this corpus made with these settings
  (every passage, vector and file digest checked) is kept, not encoded again: running the same
  command after a failure encodes only the shards that are missing or damaged.
- A task whose worker dies (a killed process, a lost node) or that fails with an ``OSError``
  is retried up to ``max_retries`` times. Errors in the input (a malformed corpus line, a wrong
  setting) are not retried: every attempt would meet them again.
- A shard that still fails does not stop the others; the run then ends with one error naming
  the failed shards, and the next run redoes only those.

Ray is imported here only, when a run starts. A local runtime is started without a dashboard
and without usage statistics; workers run in the caller's folder (every node must mount it:
the pipeline, the corpus and the shard folder are read there) and never download models."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpr_components.index_runs.corpus_split import split_corpus
from dpr_components.index_runs.shard_files import ShardError, read_manifest, shard_records
from dpr_components.index_runs.shard_run import pipeline_settings, run_shard
from dpr_components.index_runs.shard_spec import MAX_RETRIES, ShardSpec
from dpr_components.pipeline_files.loading import load_pipeline

WORKER_ENVIRONMENT = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HAYSTACK_TELEMETRY_ENABLED": "False",
    "TOKENIZERS_PARALLELISM": "false",
    "RAY_USAGE_STATS_ENABLED": "0",
}
_OBJECT_STORE_BYTES = 100 * 2**20  # tasks exchange small summaries only


@dataclass(frozen=True)
class ShardJob:
    """What every shard task needs: the pipeline file and its options, the corpus, the shard folder."""

    pipeline: str
    corpus: str
    count: int
    shard_dir: str
    overrides: tuple[str, ...] = ()
    allow_network: bool = False
    inputs: dict[str, Any] = field(default_factory=dict)  # other pipeline inputs, per component (see ``encode_shard``)
    folder: str = field(default_factory=os.getcwd)  # where relative paths resolve, on every node
    threads: int = 1


@dataclass(frozen=True)
class ShardOutcome:
    shard: str
    documents: int
    passages: int
    kept: bool  # the shard folder was already complete and checked: not encoded again


@dataclass(frozen=True)
class RaySettings:
    """``address``: ``None`` starts a local runtime of ``workers * threads`` CPUs (default: this
    machine's); ``auto`` or ``ray://host:10001`` joins a cluster. ``workers``: shards encoded at
    once (default: as many as the CPUs allow)."""

    address: str | None = None
    workers: int | None = None
    max_retries: int = MAX_RETRIES


Encoder = Callable[[ShardJob, int], ShardOutcome]
PipelineRunner = Callable[[Any, dict[str, Any]], dict[str, Any]]


def encode_shard(job: ShardJob, index: int, run: PipelineRunner | None = None) -> ShardOutcome:
    """Encode shard ``index`` of ``job`` into its folder, unless a checked copy is already there.

    :param run: runs the pipeline on one chunk's inputs (default ``pipeline.run``, which takes
        ``job.inputs`` per component)."""
    if not os.path.isdir(job.folder):
        raise ValueError(f"this node has no folder {job.folder}: start the run from a folder every node mounts")
    os.chdir(job.folder)
    import torch

    torch.set_num_threads(job.threads)
    spec = ShardSpec(index, job.count)
    pipeline = load_pipeline(job.pipeline, None, list(job.overrides), job.allow_network, require_stores=True)
    manifest = finished_shard(Path(job.shard_dir), spec, job.corpus, pipeline_settings(pipeline))
    if manifest is not None:
        return ShardOutcome(str(spec), manifest["documents"], manifest["passages"], kept=True)
    runner = pipeline.run if run is None else (lambda data: run(pipeline, data))
    result = run_shard(pipeline, job.corpus, spec, job.shard_dir, dict(job.inputs), run=runner)
    return ShardOutcome(str(spec), result.documents, result.passages, kept=False)


def finished_shard(shard_dir: Path, spec: ShardSpec, corpus: str, settings: dict[str, Any]) -> dict[str, Any] | None:
    """The manifest of shard ``spec`` in ``shard_dir`` if it is complete, was cut from ``corpus`` as
    it is now, was made with ``settings`` (the pipeline's, writer aside) and all its contents check."""
    folder = shard_dir / spec.folder_name
    if not folder.is_dir():
        return None
    try:
        manifest = read_manifest(folder)
    except (ShardError, OSError):
        return None
    split = split_corpus(corpus, spec.count)
    wanted = {name: value for name, value in settings.items() if not str(value.get("type", "")).endswith("Writer")}
    if (
        manifest.get("shard") != str(spec)
        or (manifest.get("corpus") or {}).get("sha256") != split.sha256
        or manifest.get("lines") != list(split.line_range(spec.index))
        or manifest.get("settings") != wanted
    ):
        return None
    try:
        for _ in shard_records(folder, manifest):
            pass
    except (ShardError, OSError):
        return None
    return manifest


def index_on_ray(
    job: ShardJob,
    settings: RaySettings,
    encode: Encoder = encode_shard,
    report: Callable[[str], None] | None = None,
) -> list[ShardOutcome]:
    """Run the ``job.count`` shards as Ray tasks (see the module docstring); the outcomes in shard order.

    Uses the Ray runtime of this process if one is running, else starts or joins one as
    ``settings`` says (and stops it at the end).

    :param encode: encodes one shard in a worker (default :func:`encode_shard`).
    :raises ValueError: when shards still fail after their retries (after every other shard ended)."""
    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        start_ray(settings.address, (settings.workers or max(1, (os.cpu_count() or 1) // job.threads)) * job.threads)
    try:
        return _run_tasks(ray, job, settings, encode, report)
    finally:
        if started:
            ray.shutdown()


def import_ray() -> Any:
    """The ``ray`` module, or a one-line error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ValueError("indexing on Ray needs ray: pip install 'dpr-components[ray]'") from None
    return ray


def start_ray(address: str | None, cpus: int) -> None:
    """Join the cluster at ``address``, or start a local runtime of ``cpus`` CPUs (no dashboard, no usage statistics)."""
    ray = import_ray()
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    runtime_env = {"env_vars": WORKER_ENVIRONMENT}
    if address is not None:
        ray.init(address=address, runtime_env=runtime_env, logging_level="WARNING", log_to_driver=False)
        return
    ray.init(
        num_cpus=cpus,
        include_dashboard=False,
        object_store_memory=_OBJECT_STORE_BYTES,
        runtime_env=runtime_env,
        logging_level="WARNING",
        log_to_driver=False,
    )


def _shard_task(encode: Encoder, job: ShardJob, index: int) -> ShardOutcome:
    return encode(job, index)


def _run_tasks(
    ray: Any, job: ShardJob, settings: RaySettings, encode: Encoder, report: Callable[[str], None] | None
) -> list[ShardOutcome]:
    """Submit the shards, at most ``settings.workers`` at a time; wait for all, then report the failed ones."""
    task = ray.remote(_shard_task).options(
        num_cpus=job.threads, max_retries=settings.max_retries, retry_exceptions=[OSError]
    )
    waiting = list(range(1, job.count + 1))
    running: dict[Any, int] = {}
    outcomes: dict[int, ShardOutcome] = {}
    failures: dict[int, str] = {}
    limit = settings.workers or job.count
    while waiting or running:
        while waiting and len(running) < limit:
            index = waiting.pop(0)
            running[task.remote(encode, job, index)] = index
        done, _ = ray.wait(list(running), num_returns=1)
        index = running.pop(done[0])
        try:
            outcomes[index] = ray.get(done[0])
        except Exception as error:  # noqa: BLE001 - the task's own error, or the worker's death, after the retries
            cause = getattr(error, "cause", None) or error
            failures[index] = " ".join(str(cause).split()) or type(cause).__name__
            if report:
                report(f"shard {index}/{job.count} failed: {failures[index]}")
            continue
        if report:
            outcome = outcomes[index]
            how = "kept (already complete)" if outcome.kept else "encoded"
            report(f"shard {outcome.shard}: {outcome.documents:,} documents, {outcome.passages:,} passages, {how}")
    if failures:
        first = min(failures)
        raise ValueError(
            f"{len(failures)} of {job.count} shards failed after {settings.max_retries} retries "
            f"({', '.join(f'{i}/{job.count}' for i in sorted(failures))}); shard {first}/{job.count}: "
            f"{failures[first]}; run again: complete shards are kept"
        )
    return [outcomes[i] for i in sorted(outcomes)]
