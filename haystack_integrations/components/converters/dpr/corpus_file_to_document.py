"""Converts corpus files given as ByteStreams (JSONL with id/title/text, or DPR's TSV) into one Document per record,
in the way of Haystack's converters: a file that cannot be read is logged and skipped."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from haystack import Document, component, logging
from haystack.components.converters.utils import normalize_metadata
from haystack.dataclasses import ByteStream

from dpr_components.corpus.files import CorpusError, CorpusFormat, detect_format, read_corpus_bytes
from dpr_components.utils.init_parameters import InitParametersDict
from dpr_components.utils.input_files import open_input_file

logger = logging.getLogger(__name__)

RECORD_KEY = "record_id"
_FORMATS: dict[str, CorpusFormat] = {"application/jsonl": "jsonl", "text/tab-separated-values": "tsv"}


@component
class CorpusFileToDocument(InitParametersDict):
    """Converts corpus files given as ByteStreams (JSONL with id/title/text, or DPR's TSV) into one Document per
    record, in the way of Haystack's converters: a file that cannot be read is logged and skipped.

    Each Document has the record's text as content and its source's ``meta`` with the record's
    ``title`` and its id as ``record_id`` (the Document's own id is Haystack's content hash). Every line
    is checked as ``CorpusReader`` checks a corpus file: one bad line skips the file, with the line named.

    :param on_empty: ``error`` (default: a record without text makes the file unreadable) or ``skip``
        such records.

    Usage example (the corpus files of a folder, in ``pipelines/index_files.yml``):

    ```python
    from haystack.dataclasses import ByteStream

    data = b'{"id": "q1", "title": "Hamlet", "text": "Hamlet is a tragedy."}\\n'
    converter = CorpusFileToDocument()
    stream = ByteStream(data=data, meta={"path": "faq.jsonl"}, mime_type="application/jsonl")
    converter.run(sources=[stream])["documents"][0].meta  # {"path": "faq.jsonl", "title": "Hamlet", "record_id": "q1"}
    ```
    """

    INIT_PARAMETERS = "on_empty"

    def __init__(self, *, on_empty: Literal["error", "skip"] = "error") -> None:
        if on_empty not in ("error", "skip"):
            raise ValueError(f"on_empty must be 'error' or 'skip', got {on_empty!r}")
        self.on_empty = on_empty

    @component.output_types(documents=list[Document])
    def run(
        self, sources: list[str | Path | ByteStream], meta: dict[str, Any] | list[dict[str, Any]] | None = None
    ) -> dict[str, list[Document]]:
        """Convert each corpus file into one Document per record.

        :param sources: corpus files (paths, or ByteStreams whose format is told by ``mime_type``,
            ``application/jsonl`` or ``text/tab-separated-values``, or else by the extension of ``meta["path"]``
            or ``meta["file_path"]``).
        :param meta: metadata added to the Documents of every source (a dict), or of each (a list, one per source).
        :returns: ``documents``: the records of the files that could be read, in order.
        """
        documents = []
        for given, extra in zip(sources, normalize_metadata(meta, sources_count=len(sources)), strict=True):
            try:
                source = _bytestream(given)
            except OSError as error:
                logger.warning("Could not read {source}. Skipping it. Error: {error}", source=given, error=error)
                continue
            name = str(source.meta.get("path") or source.meta.get("file_path") or "corpus file")
            try:
                fmt: CorpusFormat = _FORMATS.get(source.mime_type or "") or detect_format(Path(name))
                records = list(read_corpus_bytes(source.data, name, fmt, self.on_empty))
            except CorpusError as error:
                logger.warning("Could not read {source}. Skipping it. Error: {error}", source=source, error=error)
                continue
            for record in records:
                record_meta = {**source.meta, **extra, "title": record.title, RECORD_KEY: record.id}
                documents.append(Document(content=record.text, meta=record_meta))
        return {"documents": documents}


def _bytestream(source: str | Path | ByteStream) -> ByteStream:
    """``source`` itself, or the file it names read (under a server's input root, only inside it)."""
    if isinstance(source, ByteStream):
        return source
    with open_input_file(source, "corpus file") as handle:
        return ByteStream(data=handle.read(), meta={"file_path": str(source)})
