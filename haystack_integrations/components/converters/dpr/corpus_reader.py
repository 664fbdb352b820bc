"""Reads a corpus file, or documents given as ``records``, into Documents (``meta["title"]`` holds the title)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from haystack import Document, component

from dpr_components.corpus.files import CorpusFormat, CorpusRecord, read_corpus
from dpr_components.corpus.records import read_records
from dpr_components.utils.init_parameters import InitParametersDict
from dpr_components.utils.input_files import check_input_path


@component
class CorpusReader(InitParametersDict):
    """Reads a corpus file, or documents given as ``records``, into Documents (``meta["title"]`` holds the title).

    :param format: ``jsonl`` (``id``, ``title``, ``text``), ``tsv`` (DPR's ``psgs_w100.tsv``) or ``auto`` (by extension).
    :param on_empty: ``error`` (default) or ``skip`` documents without text.

    Usage example (the first step of ``pipelines/index.yml``):

    ```python
    reader = CorpusReader()
    documents = reader.run(path="examples/corpus.jsonl")["documents"]
    documents = reader.run(records=[{"id": "d1", "title": "Hamlet", "text": "Hamlet is a tragedy."}])["documents"]
    ```
    """

    INIT_PARAMETERS = "format on_empty"

    def __init__(self, *, format: CorpusFormat = "auto", on_empty: Literal["error", "skip"] = "error") -> None:
        if format not in ("auto", "jsonl", "tsv"):
            raise ValueError(f"format must be auto, jsonl or tsv, got {format!r}")
        if on_empty not in ("error", "skip"):
            raise ValueError(f"on_empty must be 'error' or 'skip', got {on_empty!r}")
        self.format = format
        self.on_empty = on_empty

    @component.output_types(documents=list[Document])
    def run(self, path: str | None = None, records: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Read documents from the corpus file at ``path`` or from ``records`` (give exactly one).

        :param path: a corpus file in the init ``format``.
        :param records: documents as ``{"id", "title", "text"}`` objects (``title`` optional).
        :returns: ``documents``: one Document per record, with the record's id, ``text`` as content and
            ``meta["title"]``; records without text are left out when ``on_empty`` is ``skip``.
        :raises ValueError: when both or neither of ``path`` and ``records`` are given, the file is
            outside the input root, missing or malformed, a record lacks a field, repeats an id or has
            an id the record id rule refuses (``corpus/record_ids.py``), a text is unfit to index
            (empty under ``on_empty="error"``, a word over 1,000 characters, invalid Unicode), or no
            document has text.
        """
        if (path is None) == (records is None):
            raise ValueError(
                "CorpusReader needs exactly one of 'path' (a corpus file) or 'records' (a list of documents)"
            )
        read: Iterable[CorpusRecord]
        if path is not None:
            read = read_corpus(check_input_path(path, "corpus file"), self.format, self.on_empty)
        else:
            read = read_records(records, self.on_empty)
        return {"documents": [Document(id=r.id, content=r.text, meta={"title": r.title}) for r in read]}
