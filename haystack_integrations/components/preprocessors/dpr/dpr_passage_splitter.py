"""Indexing components: read a corpus file, split documents into DPR passages."""

from __future__ import annotations

from typing import Any

from haystack import Document, component

from dpr_components.corpus.passages import DEFAULT_WORDS_PER_PASSAGE, split_document
from dpr_components.corpus.record_ids import record_id_problem
from dpr_components.utils.init_parameters import InitParametersDict
from dpr_components.utils.validation import (
    MAX_PASSAGE_CHARS,
    check_documents,
    describe_long_word,
    find_long_word,
    short_repr,
)


@component
class DPRPassageSplitter(InitParametersDict):
    """Splits documents into DPR passages: disjoint blocks of at most ``words_per_passage`` words.

    Each passage keeps its document's meta (title included) and gets ``document_id`` and
    ``passage_index``; its id is ``<document id>#<index>``, so re-indexing is idempotent. A document
    id must follow the record id rule (``corpus/record_ids.py``): no id ends in ``#`` and digits, so
    no passage id is ever a document's id.

    A document with a word of more than 1,000 characters, or a passage longer than
    ``max_passage_chars``, is refused with its id: such text (base64, minified code, a
    broken export) is not prose, and one giant passage costs gigabytes to encode.

    Usage example:

    ```python
    from haystack import Document

    splitter = DPRPassageSplitter(words_per_passage=100)
    passages = splitter.run(documents=[Document(id="d1", content="word " * 250)])["documents"]
    [p.id for p in passages]  # ["d1#0", "d1#1", "d1#2"]
    ```"""

    INIT_PARAMETERS = "words_per_passage max_passage_chars"

    def __init__(
        self, *, words_per_passage: int = DEFAULT_WORDS_PER_PASSAGE, max_passage_chars: int = MAX_PASSAGE_CHARS
    ) -> None:
        if words_per_passage <= 0:
            raise ValueError(f"words_per_passage must be positive, got {words_per_passage}")
        if max_passage_chars <= 0:
            raise ValueError(f"max_passage_chars must be positive, got {max_passage_chars}")
        self.words_per_passage = words_per_passage
        self.max_passage_chars = max_passage_chars

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """Split each document into passages of at most ``words_per_passage`` words.

        :param documents: the documents to split.
        :returns: ``documents``: the passages in document order, each with its document's meta plus
            ``document_id`` and ``passage_index``, and the id ``<document id>#<index>``.
        :raises ValueError: when a document has no text, an id the record id rule refuses (empty, over
            1,000 characters, a control character, the form ``<id>#<n>`` of a passage id), a word of more
            than 1,000 characters, or a passage longer than ``max_passage_chars``.
        """
        passages = []
        for doc in check_documents("documents", documents):
            if doc.content is None or not doc.content.strip():
                raise ValueError(f"document {doc.id!r} has no text to split")
            id_problem = record_id_problem(doc.id)
            if id_problem:
                raise ValueError(f"document {short_repr(doc.id)}: its id {id_problem}")
            long_word = find_long_word(doc.content)
            if long_word is not None:
                raise ValueError(f"document {doc.id!r} has {describe_long_word(long_word)}")
            title = doc.meta.get("title", "")
            for p in split_document(
                doc.id, title if isinstance(title, str) else "", doc.content, self.words_per_passage
            ):
                if len(p.text) > self.max_passage_chars:
                    raise ValueError(
                        f"document {doc.id!r}: passage {p.index} has {len(p.text):,} characters "
                        f"(limit {self.max_passage_chars:,}); lower words_per_passage or clean the text"
                    )
                meta = {**doc.meta, "document_id": doc.id, "passage_index": p.index}
                passages.append(Document(id=p.id, content=p.text, meta=meta))
        return {"documents": passages}
