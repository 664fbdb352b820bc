"""Served-pipeline folders for the serving tests (copies of pipelines/*.yml on the tiny models and a test store),
and ``haystack serve`` in a child process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import yaml

from dpr_components.serving.deployment import ELASTICSEARCH_URL_ENV, pipeline_files
from dpr_components.store_access.serialization import replace_store_paths
from dpr_components.utils.input_files import INPUT_ROOT_ENV
from tests.helpers.paths import PIPELINES, REPO


def write_pipelines(folder: Path, store: Path, encoder: Path, reader: Path, bert: Path, run_dir: Path) -> None:
    """Copies of pipelines/*.yml with the tiny models, the test store and a one-step training run."""
    folder.mkdir()
    settings = {
        "dense.model": str(encoder),
        "embedder.model": str(encoder),
        "embedder.cache_dir": None,
        "embedder.progress_bar": False,
        "reader.model": str(reader),
        "reader.no_answer": False,  # its calibration was fitted for the packaged reader, not a tiny random one
        "reranker.model": str(reader),
        "ranker.weight": 0.001,
        "hybrid.model": str(encoder),
        "hybrid.weight": 0.001,
        "trainer.model": str(bert),
        "trainer.output_dir": str(run_dir),
        "trainer.epochs": 1,
        "trainer.batch_size": 2,
        "trainer.progress_bar": False,
        "adapter.model": str(encoder),
        "adapter.teacher_model": str(reader),
        "adapter.output_dir": str(run_dir.with_name(run_dir.name + "-adapt")),
        "adapter.progress_bar": False,
    }
    for path in pipeline_files(PIPELINES):
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        replace_store_paths(spec, str(store))
        for key, value in settings.items():
            component, parameter = key.split(".")
            params = spec["components"].get(component, {}).get("init_parameters", {})
            if parameter in params:  # "reader" is a SpanReader in qa.yml, a CorpusReader in index.yml
                params[parameter] = value
        if "trainer" in spec["components"]:
            spec["components"]["trainer"]["init_parameters"]["settings"].update(max_length=32, threads=1)
        (folder / path.name).write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_environment(**changes: str) -> dict[str, str]:
    """This environment without the settings a test server must not inherit, with one torch thread and ``changes``."""
    env = {k: v for k, v in os.environ.items() if k not in (ELASTICSEARCH_URL_ENV, "DPR_ALLOW_NETWORK", INPUT_ROOT_ENV)}
    env.update(PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", **changes)  # one torch thread per request on a small CPU
    return env


@contextmanager
def served(folder: Path, cwd: Path, *options: str, env: dict[str, str], timeout: float = 60) -> Iterator[str]:
    """``haystack serve --pipelines-dir FOLDER`` with ``options`` on a free port, logging to ``cwd/server.log``,
    until its ``/status`` answers; yields its URL and stops it afterwards."""
    command = [sys.executable, "-m", "dpr_components.cli", "serve", "--pipelines-dir", str(folder), *options]
    with served_command(command, cwd, env=env, timeout=timeout) as url:
        yield url


@contextmanager
def served_command(command: list[str], cwd: Path, *, env: dict[str, str], timeout: float = 60) -> Iterator[str]:
    """A ``haystack serve`` ``command`` (any installation's) on a free port (``--port`` added), logging to
    ``cwd/server.log``, until its ``/status`` answers; yields its URL and stops it afterwards."""
    port = free_port()
    log_path = cwd / "server.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [*command, "--port", str(port)], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_for_status(process, url, log_path, timeout)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=20)


def _wait_for_status(process: subprocess.Popen, url: str, log_path: Path, timeout: float) -> None:
    """Returns once ``url/status`` answers 200; fails the test, with the log's end, if the server stops or is late."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            pytest.fail(f"the server stopped:\n{log_path.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/status", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"the server did not start:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.3)
