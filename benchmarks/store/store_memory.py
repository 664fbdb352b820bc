"""What the embedded store's memory holds after a long run of writes and searches, against a store opened
afresh on the same folder: RSS (``/proc/self/status``) at the start, after ``--passages`` passages written
in batches of ``--batch`` with searches between them from ``--threads`` threads (as a server's worker
threads do), after glibc's ``malloc_trim(0)`` (the server's release of freed memory,
``serving/allocator.py``), and after the store is closed and opened again from its folder. No model:
synthetic 384-dimensional vectors and passages of 30 words; the memory does not depend on what they say.

    python -m benchmarks.store.store_memory [--passages 10000] [--threads 4] [--out docs/benchmarks/store_memory]
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document

from benchmarks.common import command_line, cpu_name, log, write_report
from benchmarks.load.server_memory import memory
from dpr_components.evaluation.templates import fill_template, sibling_template
from dpr_components.serving.allocator import malloc_trim
from dpr_components.utils.threads import usable_cores
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

MODULE = "benchmarks.store.store_memory"
TEMPLATE = sibling_template(__file__, "store_memory.md.template")
DIM = 384
WORDS = [f"w{i}" for i in range(20_000)]


class Passages:
    """Batches of synthetic passages with ids ``<prefix><n>#0``, one document each, reproducible from ``seed``."""

    def __init__(self, seed: int, prefix: str) -> None:
        self.rng, self.words, self.count, self.prefix = np.random.default_rng(seed), random.Random(seed), 0, prefix

    def batch(self, size: int) -> list[Document]:
        vectors = self.rng.standard_normal((size, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        documents = []
        for vector in vectors:
            self.count += 1
            text = " ".join(self.words.choices(WORDS, k=30))
            name = f"{self.prefix}{self.count}"
            meta = {"title": name, "document_id": name}
            documents.append(Document(id=f"{name}#0", content=text, embedding=vector.tolist(), meta=meta))
        return documents


def _search(store: EmbeddedDocumentStore, seed: int) -> None:
    rng = random.Random(seed)
    store.bm25_retrieval(" ".join(rng.choices(WORDS, k=6)), top_k=20)
    store.embedding_retrieval([rng.gauss(0, 1) for _ in range(DIM)], top_k=20)


def run_writes(store: EmbeddedDocumentStore, args: argparse.Namespace) -> None:
    """``args.passages`` passages in batches, each batch followed by ``args.searches`` searches, from a pool
    of ``args.threads`` threads (the writes themselves one at a time, as the server's write queue runs them)."""
    source = Passages(seed=0, prefix="long")
    batches = [source.batch(args.batch) for _ in range(args.passages // args.batch)]
    with ThreadPoolExecutor(args.threads) as pool:
        for number, batch in enumerate(batches):
            pool.submit(store.write_documents, batch).result()
            list(pool.map(lambda s: _search(store, s), range(number * args.searches, (number + 1) * args.searches)))


def _rss() -> float:
    gc.collect()
    return memory(os.getpid())["rss_mb"]


def measure(folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The RSS at each step, in MB."""
    trim = malloc_trim()
    store = EmbeddedDocumentStore(path=str(folder), embedding_dim=DIM)
    store.write_documents(Passages(seed=1, prefix="first").batch(args.batch))
    _search(store, 0)
    steps = {"start": _rss()}
    log(f"writing {args.passages:,} passages from {args.threads} threads")
    run_writes(store, args)
    steps["written"] = _rss()
    passages = store.count_documents()
    if trim is not None:
        trim()
    steps["trimmed"] = _rss()
    del store
    if trim is not None:
        trim()
    steps["closed"] = _rss()
    fresh = EmbeddedDocumentStore(path=str(folder), embedding_dim=DIM)
    fresh.write_documents(
        Passages(seed=2, prefix="fresh").batch(args.batch)
    )  # the write path warmed, as in the long run
    _search(fresh, 0)
    steps["reopened"] = _rss()
    return {"steps": steps, "passages": passages, "trim": trim is not None}


def render(summary: dict[str, Any], command: str) -> str:
    """The markdown page."""
    steps = summary["steps"]
    grown = steps["written"] - steps["start"]
    values = {
        **summary,
        **{f"{key}_mb": f"{value:.0f}" for key, value in steps.items()},
        "grown_mb": f"{grown:.0f}",
        "per_thousand_mb": f"{1000 * grown / max(1, summary['passages']):.1f}",
        "released_mb": f"{steps['written'] - steps['trimmed']:.0f}",
        "released_share": f"{100 * (steps['written'] - steps['trimmed']) / grown:.0f}" if grown > 0 else "0",
        "kept_mb": f"{round(steps['trimmed'] - steps['reopened']) + 0:+d}",
        "passages": f"{summary['passages']:,}",
        "command": command,
    }
    return fill_template(TEMPLATE, values)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=10_000, help="passages written (default: 10000)")
    parser.add_argument("--batch", type=int, default=10, help="passages a write (default: 10)")
    parser.add_argument("--searches", type=int, default=4, help="searches after each write (default: 4)")
    parser.add_argument("--threads", type=int, default=4, help="threads the writes and searches run on (default: 4)")
    parser.add_argument("--out", default="docs/benchmarks/store/store_memory", help="report path without suffix")
    return parser


def main() -> None:
    args = _parser().parse_args()
    command = command_line(MODULE, sys.argv[1:])
    with tempfile.TemporaryDirectory(prefix="store-memory-") as folder:
        measured = measure(Path(folder) / "store", args)
    summary = {"cpu": cpu_name(), "cores": usable_cores(), **vars(args), **measured, "command": command}
    summary.pop("out")
    write_report(Path(args.out), summary, render(summary, command))
    log(f"wrote {args.out}.md")


if __name__ == "__main__":
    main()
