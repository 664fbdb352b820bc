"""Clients of ``haystack serve`` for the load benchmark: start a server on a free port, ask questions
from one client or from several at once, and time each request."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

from benchmarks.common import REPO_ROOT
from dpr_components.store_access.serialization import replace_store_paths
from dpr_components.utils.threads import QUERY_THREADS_ENV, WAIT_POLICY_ENV

STARTUP_SECONDS = 180


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_served_pipelines(folder: Path, store: Path, names: list[str]) -> None:
    """Copies of ``pipelines/{name}.yml`` whose stores are ``store``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        spec = yaml.safe_load((REPO_ROOT / "pipelines" / f"{name}.yml").read_text(encoding="utf-8"))
        replace_store_paths(spec, str(store.resolve()))
        (folder / f"{name}.yml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")


@contextmanager
def running_server(
    pipelines: Path, work: Path, query_threads: int, concurrent_runs: int | None = None
) -> Iterator[str]:
    """``haystack serve`` on ``pipelines`` with ``--query-threads`` (and ``--concurrent-runs`` when given),
    torch's default threads otherwise; its URL."""
    options = ["--concurrent-runs", str(concurrent_runs)] if concurrent_runs else []
    with server_process(pipelines, work, query_threads, options) as (url, _):
        yield url


@contextmanager
def server_process(
    pipelines: Path, work: Path, query_threads: int, options: Sequence[str] = (), label: str = ""
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``haystack serve`` on ``pipelines`` with ``--query-threads`` and ``options``: its URL and its process
    (whose memory a benchmark may read), its log in ``work/server-{label or query_threads}.log``."""
    port = free_port()
    # the server sets its own thread and wait-policy defaults
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", QUERY_THREADS_ENV, WAIT_POLICY_ENV)}
    env["PYTHONPATH"] = str(REPO_ROOT)
    log_path = work / f"server-{label or query_threads}.log"
    command = [sys.executable, "-m", "dpr_components.cli", "serve", "--pipelines-dir", str(pipelines)]
    command += ["--port", str(port), "--input-root", str(work / "served"), "--query-threads", str(query_threads)]
    command += list(options)
    with log_path.open("w") as log:
        process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_until_up(process, url, log_path)
            yield url, process
        finally:
            process.terminate()
            process.wait(timeout=30)


def _wait_until_up(process: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server stopped:\n{log_path.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/status", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"the server did not start in {STARTUP_SECONDS} s:\n{log_path.read_text()[-3000:]}")


def ask(client: httpx.Client, url: str, pipeline: str, question: str) -> tuple[float, Any]:
    """Seconds one ``POST /{pipeline}/run`` took and its result."""
    start = time.perf_counter()
    response = client.post(f"{url}/{pipeline}/run", json={"query": question}, timeout=600)
    seconds = time.perf_counter() - start
    response.raise_for_status()
    return seconds, response.json()["result"]


def clients(url: str, pipeline: str, questions: list[str], count: int) -> tuple[list[float], dict[str, list[Any]]]:
    """``count`` clients at once, each asking every question (starting at its own offset); the
    seconds of every request and the results received for each question."""

    def one_client(offset: int) -> list[tuple[str, float, Any]]:
        order = questions[offset % len(questions) :] + questions[: offset % len(questions)]
        with httpx.Client() as client:
            return [(q, *ask(client, url, pipeline, q)) for q in order]

    with ThreadPoolExecutor(count) as pool:
        runs = list(pool.map(one_client, range(count)))
    seconds = [s for run in runs for _, s, _ in run]
    results: dict[str, list[Any]] = {q: [] for q in questions}
    for run in runs:
        for question, _, result in run:
            results[question].append(result)
    return seconds, results


def bursts(url: str, pipeline: str, questions: list[str], rounds: int) -> list[float]:
    """``rounds`` times, every question sent at once by its own client; the seconds of every request."""

    def one(question: str) -> float:
        with httpx.Client() as client:
            return ask(client, url, pipeline, question)[0]

    seconds: list[float] = []
    with ThreadPoolExecutor(len(questions)) as pool:
        for _ in range(rounds):
            seconds += list(pool.map(one, questions))
    return seconds
