"""Makes the converted documents of a folder's files ready to split (stable ids, titles, the files' metadata) and
names, with the reason, each file that gave no text: the converter skipped it, or it holds none."""

from __future__ import annotations

from typing import Any

from haystack import Document, component
from haystack.dataclasses import ByteStream

from dpr_components.corpus.conversion_failures import capture_converter_failures
from dpr_components.corpus.file_documents import file_documents
from dpr_components.corpus.folder_files import refusal_entries
from dpr_components.utils.init_parameters import InitParametersDict
from dpr_components.utils.validation import check_documents


@component
class FileDocumentChecker(InitParametersDict):
    """Makes the converted documents of a folder's files ready to split (stable ids, titles, the files' metadata)
    and names, with the reason, each file that gave no text: the converter skipped it, or it holds none.

    A document's id is its file's path in the folder (a corpus file's record: ``<path>/<record id>``); its
    ``meta`` is ``title``, ``path``, ``file_type``, ``modified`` and ``content_hash`` (and ``record_id``).
    Haystack's converters log a file they cannot read and go on: from warm-up on, those warnings are kept
    as the reasons (``dpr_components/corpus/conversion_failures.py``), so a broken PDF ends as one line
    ``{"path", "reason"}`` in ``skipped`` rather than silently missing. A text with a "word" of more than
    1,000 characters is refused here, as the splitter would refuse it.

    Usage example (after the converters and ``DocumentCleaner`` in ``pipelines/index_files.yml``):

    ```python
    checker = FileDocumentChecker()
    checker.warm_up()
    result = checker.run(documents=cleaned, sources=synced)
    result["documents"]  # ready for DPRPassageSplitter
    result["skipped"]  # [{"path": "scan.pdf", "reason": "no text found in it (a scanned PDF ...)"}]
    ```
    """

    INIT_PARAMETERS = ""

    def warm_up(self) -> None:
        """Start keeping the converters' reasons for skipping a folder's file (once per process)."""
        capture_converter_failures()

    @component.output_types(documents=list[Document], skipped=list[dict[str, str]])
    def run(self, documents: list[Document], sources: list[ByteStream]) -> dict[str, Any]:
        """Make each file's documents ready to split, and name the files without any.

        :param documents: what the converters (and the cleaner) made of ``sources``.
        :param sources: the files sent to the converters, with ``meta`` ``path``, ``file_type``,
            ``modified`` and ``content_hash`` (as ``FolderFetcher`` gives them).
        :returns: ``documents``: the files' documents with their ids, titles and metadata, in the order of
            ``sources`` (documents of no folder file after them, unchanged); ``skipped``: ``{"path", "reason"}``
            of each file that gave none.
        :raises ValueError: when ``documents`` is not a list of Documents or a source lacks its metadata.
        """
        capture_converter_failures()
        check_documents("documents", documents)
        for index, source in enumerate(sources):
            if not all(isinstance(source.meta.get(key), str) for key in ("path", "file_type", "content_hash")):
                raise ValueError(f"sources[{index}] has no meta 'path', 'file_type' and 'content_hash'")
        ready, refused = file_documents(documents, sources)
        return {"documents": ready, "skipped": refusal_entries(refused)}
