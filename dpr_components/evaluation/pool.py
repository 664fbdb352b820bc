"""The evaluation pool: the shared Wikipedia documents split into DPR passages, and a store of them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

from dpr_components.corpus.passages import Passage, split_documents
from dpr_components.utils.settings import cache_dir, data_dir
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore


def pool_path() -> Path:
    """The pool's documents (``wiki/documents.jsonl`` under the data folder); exits when it is missing."""
    path = data_dir() / "wiki" / "documents.jsonl"
    if not path.is_file():
        raise SystemExit(f"the passage pool {path} is missing: set DPR_DATA_DIR to the shared data folder")
    return path


def _documents(path: Path) -> Iterator[tuple[str, str, str]]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            yield record["id"], record.get("title", ""), record["text"]


def pool_passages(limit: int | None = None) -> list[Passage]:
    """The pool's passages in file order (55,350 for the full pool)."""
    passages = list(split_documents(_documents(pool_path())))
    return passages[:limit] if limit else passages


def pool_store(model: str | None, path: Path) -> EmbeddedDocumentStore:
    """The pool indexed with ``model`` (built on first use; later runs reopen it). Without a
    model the store holds text only: BM25 search, no vectors."""
    from haystack_integrations.components.embedders.dpr.passage_embedder import PassageEmbedder

    passages = pool_passages()
    store = EmbeddedDocumentStore(path=str(path))
    if store.count_documents() == len(passages):
        return store
    print(f"indexing {len(passages)} passages into {path}", flush=True)
    documents = [
        Document(
            id=p.id, content=p.text, meta={"title": p.title, "document_id": p.document_id, "passage_index": p.index}
        )
        for p in passages
    ]
    if model is not None:
        embedder = PassageEmbedder(model=model, cache_dir=str(cache_dir() / "embeddings"))
        documents = embedder.run(documents=documents)["documents"]
    store.write_documents(documents, policy=DuplicatePolicy.OVERWRITE)
    return store
