"""DPR's passage split: disjoint blocks of at most 100 words, each keeping its document's title."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from dpr_components.corpus.record_ids import passage_id

DEFAULT_WORDS_PER_PASSAGE = 100


@dataclass(frozen=True)
class Passage:
    """One block of a document. ``id`` is ``<document id>#<block number>``, stable across runs (the document
    id rule of ``record_ids`` keeps it from being any document's id)."""

    id: str
    title: str
    text: str
    document_id: str
    index: int


def split_text(text: str, words_per_passage: int = DEFAULT_WORDS_PER_PASSAGE) -> list[str]:
    """Split on whitespace into consecutive blocks of ``words_per_passage`` words (the last may be shorter)."""
    if words_per_passage <= 0:
        raise ValueError(f"words_per_passage must be positive, got {words_per_passage}")
    words = text.split()
    return [" ".join(words[i : i + words_per_passage]) for i in range(0, len(words), words_per_passage)]


def split_document(
    document_id: str, title: str, text: str, words_per_passage: int = DEFAULT_WORDS_PER_PASSAGE
) -> list[Passage]:
    """All passages of one document; a document without words gives none."""
    return [
        Passage(id=passage_id(document_id, i), title=title, text=block, document_id=document_id, index=i)
        for i, block in enumerate(split_text(text, words_per_passage))
    ]


def split_documents(
    documents: Iterable[tuple[str, str, str]], words_per_passage: int = DEFAULT_WORDS_PER_PASSAGE
) -> Iterator[Passage]:
    """Split ``(id, title, text)`` triples into passages, in order."""
    for document_id, title, text in documents:
        yield from split_document(document_id, title, text, words_per_passage)
