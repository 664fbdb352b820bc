"""Small documents for store tests: random words and vectors (the same for the same number and seed), a hybrid trio."""

from __future__ import annotations

import numpy as np
from haystack import Document

from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

DIM = 16
WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]


def random_document(i: int, seed: int, with_vector: bool = True, prefix: str = "d") -> Document:
    """Document ``{prefix}{i}``: six of WORDS, group ``i % 3`` and (``with_vector``) a DIM-wide embedding."""
    rng = np.random.default_rng(seed * 100_003 + i)
    text = " ".join(rng.choice(WORDS, size=6).tolist())
    return Document(
        id=f"{prefix}{i}",
        content=text,
        meta={"group": i % 3},
        embedding=rng.normal(size=DIM).astype(np.float32).tolist() if with_vector else None,
    )


def lexical_and_semantic_store() -> EmbeddedDocumentStore:
    """A store of three: "lex" found by BM25 for "zebra", "sem" by the vector [1, 0], "both" by either."""
    store = EmbeddedDocumentStore()
    store.write_documents(
        [
            Document(id="lex", content="zebra zebra facts", embedding=[0.0, 1.0]),
            Document(id="sem", content="striped horse-like animal", embedding=[1.0, 0.0]),
            Document(id="both", content="zebra animal", embedding=[0.7, 0.7]),
        ]
    )
    return store
