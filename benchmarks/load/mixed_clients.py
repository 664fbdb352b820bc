"""Clients of a served store for the load benchmarks: searching clients that ask without pause, one
client that indexes records at a set rate (``POST /index/run``), one that reads source documents
(``GET /documents/{id}``), all until a stop event, each request timed and every failure kept."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

TIMEOUT = 600
RECORD_WORDS = 30  # a short document: one passage


@dataclass
class Timings:
    """What one kind of client did: the seconds of each request, its failures, and (indexing) the records
    sent and the passages the server said it wrote."""

    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    records: int = 0
    written: int = 0
    ids: list[str] = field(default_factory=list)


def corpus_rows(corpus: Path) -> list[dict[str, Any]]:
    """The rows (``id``, ``title``, ``text``) of a JSON-lines corpus."""
    return [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]


def make_records(
    rows: list[dict[str, Any]], prefix: str, start: int, count: int, words: int = RECORD_WORDS
) -> list[dict[str, Any]]:
    """``count`` new records of ``words`` words from the corpus's texts (each starting at a word of its own),
    ids ``{prefix}-{n}``; each text ends with a word of its own (``record{n}``), as new documents bring new
    words."""
    records = []
    for n in range(start, start + count):
        row = rows[n % len(rows)]
        tokens = row["text"].split()
        begin = (n // len(rows)) % max(1, len(tokens) - words + 1)
        text = " ".join([*tokens[begin : begin + words], f"record{n}"])
        records.append({"id": f"{prefix}-{n}", "title": row.get("title") or "", "text": text})
    return records


def _note(out: Timings, response: httpx.Response | None, error: Exception | None) -> bool:
    if error is not None:
        out.errors.append(f"{type(error).__name__}: {error}"[:300])
        return False
    assert response is not None
    if response.status_code >= 400:
        out.errors.append(f"HTTP {response.status_code}: {response.text[:300]}")
        return False
    return True


def _request(
    client: httpx.Client, method: str, url: str, **kwargs: Any
) -> tuple[float, httpx.Response | None, Exception | None]:
    start = time.perf_counter()
    try:
        response = client.request(method, url, timeout=TIMEOUT, **kwargs)
    except httpx.HTTPError as error:
        return time.perf_counter() - start, None, error
    return time.perf_counter() - start, response, None


def search_client(
    url: str, pipeline: str, questions: list[str], offset: int, stop: threading.Event, out: Timings
) -> None:
    """Ask ``questions`` in turn (from ``offset``) without pause until ``stop``."""
    with httpx.Client() as client:
        n = offset
        while not stop.is_set():
            question = questions[n % len(questions)]
            seconds, response, error = _request(client, "POST", f"{url}/{pipeline}/run", json={"query": question})
            if _note(out, response, error):
                out.seconds.append(seconds)
            n += 1


@dataclass(frozen=True)
class IndexPlan:
    """What the indexing client sends: up to ``rate`` records per second, ``batch`` a request, ``words``
    words each, ids ``{prefix}-{n}``."""

    rate: float
    batch: int
    words: int = RECORD_WORDS
    prefix: str = "load"


def index_client(url: str, rows: list[dict[str, Any]], plan: IndexPlan, stop: threading.Event, out: Timings) -> None:
    """Send ``plan.batch`` records at a time, one request after the other, at most ``plan.rate`` records per
    second (a request that is late is sent at once: the rate reached is what the server allows)."""
    start = time.perf_counter()
    with httpx.Client() as client:
        while not stop.is_set():
            pause = start + out.records / plan.rate - time.perf_counter()
            if pause > 0 and stop.wait(pause):
                break
            records = make_records(rows, plan.prefix, out.records, plan.batch, plan.words)
            seconds, response, error = _request(client, "POST", f"{url}/index/run", json={"records": records})
            out.records += plan.batch
            if _note(out, response, error):
                assert response is not None
                out.seconds.append(seconds)
                out.written += int(response.json()["result"]["documents_written"])
                out.ids += [record["id"] for record in records]


def documents_client(
    url: str, pipeline: str, pools: Sequence[list[str]], stop: threading.Event, out: Timings, pause: float
) -> None:
    """Read source documents by id, one every ``pause`` seconds, each drawn from all the ids of ``pools``
    (lists that may grow meanwhile: the ids an indexing client wrote)."""
    chosen = random.Random(0)
    with httpx.Client() as client:
        while not stop.wait(pause):
            n = chosen.randrange(sum(len(pool) for pool in pools))
            for pool in pools:
                if n < len(pool):
                    break
                n -= len(pool)
            path = f"{url}/documents/{quote(pool[n], safe='')}"
            seconds, response, error = _request(client, "GET", path, params={"pipeline": pipeline})
            if _note(out, response, error):
                out.seconds.append(seconds)


def passages(url: str) -> dict[str, int | None]:
    """``GET /stores``: the passages of each served pipeline's store."""
    found = httpx.get(f"{url}/stores", timeout=TIMEOUT).json()["stores"]
    return {name: state.get("passages") for name, state in found.items()}


def missing_documents(url: str, pipeline: str, ids: list[str]) -> list[str]:
    """The ids of ``ids`` that ``GET /documents/{id}`` does not serve."""
    missing = []
    with httpx.Client() as client:
        for document_id in ids:
            path = f"{url}/documents/{quote(document_id, safe='')}"
            if client.get(path, params={"pipeline": pipeline}, timeout=TIMEOUT).status_code != 200:
                missing.append(document_id)
    return missing
