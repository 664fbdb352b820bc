"""``haystack serve`` under a search load: the index route beside searches that fill every run slot.

The app of ``build_app`` is driven in process; the searches are made slow (each waits until the test
releases it), so that they hold both run slots of a 2-core server while more wait, as a burst of
searches does. Rates under a real load: docs/benchmarks/load/index_under_search.md."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from dpr_components.serving.app import build_app
from dpr_components.serving.wrappers import SearchWrapper
from dpr_components.store_access.serialization import replace_store_paths
from tests.reliability.harness import PIPELINES

RECORDS = [{"id": "zebra", "title": "Zebra", "text": "Zebras are African equines with black and white stripes."}]


@pytest.fixture()
def pipelines_dir(tmp_path: Path, indexed_store: Path, tiny_st_dir: Path) -> Path:
    """bm25 and index (the tiny encoder) on a small store."""
    folder = tmp_path / "pipelines"
    folder.mkdir()
    for name in ("bm25", "index"):
        spec = yaml.safe_load((PIPELINES / f"{name}.yml").read_text(encoding="utf-8"))
        replace_store_paths(spec, str(indexed_store))
        embedder = spec["components"].get("embedder", {}).get("init_parameters")
        if embedder is not None:
            embedder.update(model=str(tiny_st_dir), cache_dir=None, progress_bar=False)
        (folder / f"{name}.yml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return folder


class SlowSearches:
    """Searches that wait, each in its run slot, until ``release`` is set; ``running`` counts those waiting."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.running = 0
        self._lock = threading.Lock()
        self.original = SearchWrapper.run_api

    def patch(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Make every search of the app slow."""
        slow = self

        def run_api(wrapper: SearchWrapper, *args: Any, **kwargs: Any) -> Any:
            with slow._lock:
                slow.running += 1
            slow.release.wait(120)
            return slow.original(wrapper, *args, **kwargs)

        monkeypatch.setattr(SearchWrapper, "run_api", run_api)


async def _index_while_searching(app: Any, slow: SlowSearches) -> tuple[int, bool, list[int], list[str]]:
    """Four searches (two run, two wait), then an index request: its status, whether it was answered while
    the searches still held their slots, the searches' statuses, and what a search finds afterwards."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:1416", timeout=120) as client:
        searches = [asyncio.create_task(client.post("/bm25/run", json={"query": f"hamlet {n}"})) for n in range(4)]
        while slow.running < 2:  # both run slots of the server are taken
            assert not any(task.done() for task in searches), [task.result().text for task in searches if task.done()]
            await asyncio.sleep(0.01)
        indexed = await asyncio.wait_for(client.post("/index/run", json={"records": RECORDS}), 60)
        answered_while_busy = not slow.release.is_set() and not any(task.done() for task in searches)
        slow.release.set()
        statuses = [reply.status_code for reply in await asyncio.gather(*searches)]
        found = await client.post("/bm25/run", json={"query": "zebra stripes"})
    ids = [document["id"] for document in found.json()["result"]["documents"]]
    return indexed.status_code, answered_while_busy, statuses, ids


@pytest.mark.reliability(category="concurrency", expect="correct result")
def test_index_request_beside_searches_that_fill_the_server(
    pipelines_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """POST /index/run while slow searches hold both run slots of haystack serve and two more wait"""
    app, _ = build_app(pipelines_dir, concurrent_runs=2)
    slow = SlowSearches()
    slow.patch(monkeypatch)
    status, answered_while_busy, statuses, ids = asyncio.run(_index_while_searching(app, slow))
    assert status == 200 and answered_while_busy, "the index request waited behind the searches"
    assert statuses == [200] * 4
    assert any(document_id.startswith("zebra") for document_id in ids), ids  # the write is searchable
