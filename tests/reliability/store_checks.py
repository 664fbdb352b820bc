"""What the store cases compare: a store's searches, in this process, against a clean build."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import numpy as np

from tests.helpers.corpora import write_jsonl

QUERIES = ["who wrote hamlet", "highest mountain", "nobel prize physics", "largest planet gas giant"]
DIM = 32  # the tiny test encoder


def query_vectors(n: int = 4, seed: int = 7) -> list[list[float]]:
    return np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32).tolist()


def open_store(path: Path, **settings: Any) -> Any:
    """A handle on ``path`` with a backend of its own: no handle left from before shares its state."""
    from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

    gc.collect()  # handles are shared per folder while alive; start from the files
    return EmbeddedDocumentStore(path=str(path), **settings)


def searches(path: Path) -> list[list[tuple[str, float]]]:
    """Ids and rounded scores of BM25 and dense searches, as a freshly opened store answers them."""
    store = open_store(path)
    results = [[(d.id, round(d.score, 4)) for d in store.bm25_retrieval(q, top_k=10)] for q in QUERIES]
    results += [[(d.id, round(d.score, 4)) for d in store.embedding_retrieval(v, top_k=10)] for v in query_vectors()]
    del store
    gc.collect()
    return results


def write_corpus(path: Path, records: list[dict[str, str]]) -> Path:
    """``records`` as a JSON-lines corpus file."""
    return write_jsonl(path, records)


MORE_CORPUS = [
    {
        "id": "nile",
        "title": "Nile",
        "text": "The Nile is a major river in Africa, flowing north into the Mediterranean Sea.",
    },
    {
        "id": "tea",
        "title": "Tea",
        "text": "Tea is an aromatic drink prepared by pouring hot water over cured tea leaves.",
    },
    {
        "id": "chess",
        "title": "Chess",
        "text": "Chess is a board game for two players on a checkered board of 64 squares.",
    },
]
