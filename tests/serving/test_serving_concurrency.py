"""The server runs at most ``concurrent_runs`` pipelines at once; the other requests wait their turn."""

from __future__ import annotations

import asyncio
import threading
import time

import anyio
import httpx
import pytest
from fastapi import FastAPI
from hayhooks import BasePipelineWrapper

from dpr_components.serving.routes import add_run_route
from dpr_components.utils import threads
from dpr_components.utils.threads import QUERY_THREADS_ENV, default_concurrent_runs


class CountingWrapper(BasePipelineWrapper):
    """A stand-in pipeline that records how many of its runs overlap."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0

    def setup(self) -> None:
        pass

    def run_api(self, query: str) -> str:
        """Echo the query.

        :param query: any text.
        :returns: the same text.
        """
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(0.05)
        with self.lock:
            self.running -= 1
        return query


async def _six_requests(app: FastAPI) -> list[int]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        replies = await asyncio.gather(*(client.post("/echo/run", json={"query": f"q{i}"}) for i in range(6)))
    return [reply.status_code for reply in replies]


@pytest.mark.parametrize("limit", [1, 2])
def test_runs_at_once_never_exceed_the_limit(limit: int) -> None:
    app, wrapper = FastAPI(), CountingWrapper()
    add_run_route(app, "echo", wrapper, anyio.CapacityLimiter(limit))
    assert asyncio.run(_six_requests(app)) == [200] * 6
    assert wrapper.most == limit  # six requests arrived together: the limit was reached, never passed


def test_usable_cores_follow_the_process_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    if not hasattr(threads.os, "sched_getaffinity"):
        pytest.skip("this system does not report a CPU affinity")
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 3, 5})
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 64)
    assert threads.usable_cores() == 3


def test_default_concurrency_fills_the_cores_at_the_query_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "usable_cores", lambda: 8)
    monkeypatch.delenv(QUERY_THREADS_ENV, raising=False)
    assert default_concurrent_runs() == 8
    monkeypatch.setenv(QUERY_THREADS_ENV, "2")
    assert default_concurrent_runs() == 4
    monkeypatch.setenv(QUERY_THREADS_ENV, "8")  # the most the cores allow
    assert default_concurrent_runs() == 1
