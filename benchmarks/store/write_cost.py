"""What a write costs: N documents written one at a time vs in one batch, on EmbeddedDocumentStore
(in a folder, autosave on: the default) and on Haystack's InMemoryDocumentStore, into an empty
store and into one already holding many passages; plus the first searches after the writes,
which bring the store's indexes up to date and save them. Writes docs/benchmarks/store/write_cost.md (+ .json).

    python -m benchmarks.store.write_cost [--n 300] [--stored 0 5000 50000] [--out docs/benchmarks/store]

Passages are synthetic (words drawn from a fixed vocabulary, random 64-dimensional vectors):
the cost of a write does not depend on what the text says."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy

from benchmarks.common import REPO_ROOT, timed
from dpr_components.evaluation.tables import table_header
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

COMMAND = "python -m benchmarks.store.write_cost"
DIM = 64
_VOCABULARY = [
    f"{a}{b}"
    for a in ("ka", "lo", "mi", "nu", "pe", "ri", "su", "ta")
    for b in ("ber", "con", "dal", "fen", "gor", "hin", "lum", "mos")
]


def passages(count: int, prefix: str, seed: int) -> list[Document]:
    rng = np.random.default_rng(seed)
    words = rng.integers(0, len(_VOCABULARY), size=(count, 40))
    vectors = rng.normal(size=(count, DIM)).astype(np.float32)
    return [
        Document(
            id=f"{prefix}{i}",
            content=" ".join(_VOCABULARY[w] for w in words[i]),
            meta={"title": f"Title {i % 997}"},
            embedding=vectors[i].tolist(),
        )
        for i in range(count)
    ]


def _search(store: Any) -> None:
    query = np.random.default_rng(7).normal(size=DIM).tolist()
    store.embedding_retrieval(query_embedding=query, top_k=10)
    store.bm25_retrieval(query=f"{_VOCABULARY[3]} {_VOCABULARY[40]}", top_k=10)


def measure(make_store: Callable[[str], Any], n: int, stored: int, folder: str) -> dict[str, float]:
    """Seconds for n single writes, the first searches after them, one batch of n, and the searches after it."""
    store = make_store(folder)
    if stored:
        store.write_documents(passages(stored, "stored-", seed=1))
        if isinstance(store, EmbeddedDocumentStore):
            store.save()  # a store in use: its indexes built and saved
        _search(store)
    singles = passages(n, "single-", seed=2)
    single = timed(lambda: [store.write_documents([doc]) for doc in singles])[0]
    search_after_single = timed(lambda: _search(store))[0]
    batch = timed(lambda: store.write_documents(passages(n, "batch-", seed=3)))[0]
    search_after_batch = timed(lambda: _search(store))[0]
    return {
        "single_writes_s": single,
        "batch_write_s": batch,
        "single_over_batch": single / batch,
        "ms_per_single_write": 1000 * single / n,
        "first_searches_after_single_writes_s": search_after_single,
        "first_searches_after_batch_s": search_after_batch,
    }


class SavingAfterEveryWrite(EmbeddedDocumentStore):
    """Both indexes brought up to date and saved by every write: what autosave did before it became lazy."""

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        written = super().write_documents(documents, policy)
        self.save()
        return written


EAGER = "EmbeddedDocumentStore (folder, save() after every write)"
STORES: dict[str, Callable[[str], Any]] = {
    "EmbeddedDocumentStore (folder, autosave)": lambda folder: EmbeddedDocumentStore(path=folder),
    EAGER: lambda folder: SavingAfterEveryWrite(path=folder),
    "InMemoryDocumentStore": lambda _folder: InMemoryDocumentStore(),
}
EAGER_MAX_STORED = 5_000  # beyond, every single write rebuilds a large BM25 index: minutes for N writes


def render(n: int, results: list[dict[str, Any]]) -> str:
    lines = [
        "# Write cost: single writes vs one batch",
        "",
        f"Made by `{COMMAND}` (haystack-ai {version('haystack-ai')}, {os.cpu_count()} CPU cores, "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}).",
        f"N = {n} synthetic passages ({DIM}-dimensional vectors, 40 words each) written one `write_documents`",
        "call at a time, then N more in one call, into a store that already holds the given number of",
        "passages (its indexes built and saved). EmbeddedDocumentStore saves lazily: a write commits",
        "to SQLite and marks the indexes unsaved; the next search brings the index it uses up to date",
        "(FAISS adds the new vectors, BM25 adds a segment: both in proportion to the writes). The last two columns are those",
        "first searches (one dense and one BM25 query). For comparison, the same store saving both",
        f"indexes after every write (what autosave did before saving became lazy), up to {EAGER_MAX_STORED:,} stored passages.",
        "",
        *table_header(
            [
                "store",
                "passages stored before",
                "N single writes (s)",
                "ms per single write",
                "one batch of N (s)",
                "single / batch",
                "first searches after single writes (s)",
                "after the batch (s)",
            ],
            "lrrrrrrr",
        ),
    ]
    for r in results:
        m = r["seconds"]
        lines.append(
            f"| {r['store']} | {r['stored']:,} | {m['single_writes_s']:.3f} | {m['ms_per_single_write']:.2f} | "
            f"{m['batch_write_s']:.3f} | {m['single_over_batch']:.1f} | {m['first_searches_after_single_writes_s']:.3f} | "
            f"{m['first_searches_after_batch_s']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300, help="documents written singly, and in the batch")
    parser.add_argument(
        "--stored", type=int, nargs="+", default=[0, 5_000, 50_000], help="passages already in the store"
    )
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "benchmarks" / "store")
    args = parser.parse_args()
    results = []
    for stored in args.stored:
        for name, make in STORES.items():
            if name == EAGER and stored > EAGER_MAX_STORED:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                seconds = measure(make, args.n, stored, str(Path(tmp) / "store"))
            results.append({"store": name, "stored": stored, "n": args.n, "seconds": seconds})
            print(
                f"{name}, {stored} stored: {seconds['single_writes_s']:.3f}s single, {seconds['batch_write_s']:.3f}s batch"
            )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "write_cost.md").write_text(render(args.n, results), encoding="utf-8")
    (args.out / "write_cost.json").write_text(
        json.dumps({"command": COMMAND, "results": results}, indent=2) + "\n", encoding="utf-8"
    )
    print(f"wrote {args.out / 'write_cost.md'}")


if __name__ == "__main__":
    main()
