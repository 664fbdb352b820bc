"""The server runs at most ``concurrent_runs`` pipelines at once; the other requests wait their turn."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import anyio
import httpx
import pytest
from fastapi import FastAPI
from hayhooks import BasePipelineWrapper

from dpr_components.serving.routes import add_run_route
from dpr_components.serving.run_queues import RunQueues, WriteQueue
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


class BlockingWrapper(CountingWrapper):
    """A stand-in search that holds its run slot until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def run_api(self, query: str) -> str:
        """Wait for the release, then echo the query.

        :param query: any text.
        :returns: the same text.
        """
        self.release.wait(60)
        return super().run_api(query)


INDEX_SPEC = {"components": {"reader": {"type": "x.CorpusReader"}, "writer": {"type": "x.PassageWriter"}}}
SEARCH_SPEC = {"components": {"bm25": {"type": "x.BM25Retriever"}}}


def test_queues_send_the_pipelines_that_write_to_their_own() -> None:
    own, shared = RunQueues.create(2), RunQueues.create(2, "shared")
    assert own.for_spec(INDEX_SPEC) is own.writes and own.for_spec(SEARCH_SPEC) is own.reads is not own.writes
    assert own.most_at_once() == 3  # the searches' 2, and one write
    assert shared.for_spec(INDEX_SPEC) is shared.reads and shared.most_at_once() == 2
    with pytest.raises(ValueError, match="write_queue 'mine': must be one of own, shared"):
        RunQueues.create(2, "mine")  # type: ignore[arg-type]


async def _until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.01)


async def _index_beside_blocked_searches(queue: WriteQueue) -> tuple[list[int], bool]:
    """One search slot, held by a search that blocks, two more searches waiting, then an index request: its
    status codes (searches, then index) and whether the index run finished before the searches were released."""
    queues, search, index = RunQueues.create(1, queue), BlockingWrapper(), CountingWrapper()
    app = FastAPI()
    add_run_route(app, "search", search, queues.for_spec(SEARCH_SPEC))
    add_run_route(app, "index", index, queues.for_spec(INDEX_SPEC))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        searches = [asyncio.create_task(client.post("/search/run", json={"query": f"q{i}"})) for i in range(3)]
        await asyncio.wait_for(_until(lambda: queues.reads.statistics().tasks_waiting == 2), 30)
        indexing = asyncio.create_task(client.post("/index/run", json={"query": "records"}))
        if queue == "own":
            await asyncio.wait_for(asyncio.shield(indexing), 30)
        else:  # behind the searches that came first
            await asyncio.wait_for(_until(lambda: queues.reads.statistics().tasks_waiting == 3), 30)
        before_release = indexing.done()
        search.release.set()
        replies = [*await asyncio.gather(*searches), await indexing]
    return [reply.status_code for reply in replies], before_release


def test_an_index_request_does_not_wait_behind_the_searches() -> None:
    assert asyncio.run(_index_beside_blocked_searches("own")) == ([200] * 4, True)
    assert asyncio.run(_index_beside_blocked_searches("shared")) == ([200] * 4, False)  # the former behaviour
