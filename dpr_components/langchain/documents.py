"""Haystack Documents as LangChain Documents."""

from __future__ import annotations

from haystack import Document as HaystackDocument
from langchain_core.documents import Document


def to_langchain_document(document: HaystackDocument) -> Document:
    """``page_content`` is the content; ``metadata`` is the meta plus ``id`` and ``score`` (when scored).

    The title, which the store keeps in ``meta["title"]``, comes with the meta; embeddings stay behind."""
    metadata = dict(document.meta)
    metadata["id"] = document.id
    if document.score is not None:
        metadata["score"] = document.score
    return Document(page_content=document.content or "", metadata=metadata, id=document.id)
