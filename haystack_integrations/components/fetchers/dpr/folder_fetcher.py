"""Lists a folder's documents safely and fetches them as ByteStreams, each with its path, type, modification
time and content hash in ``meta``, for Haystack's ``FileTypeRouter`` and converters."""

from __future__ import annotations

from typing import Any

from haystack import component
from haystack.dataclasses import ByteStream

from dpr_components.corpus.folder_files import list_folder, refusal_entries, uploaded_files
from dpr_components.utils.init_parameters import InitParametersDict
from dpr_components.utils.worker_threads import in_worker_thread


@component
class FolderFetcher(InitParametersDict):
    """Lists a folder's documents safely and fetches them as ByteStreams, each with its path, type,
    modification time and content hash in ``meta``, for Haystack's ``FileTypeRouter`` and converters.

    The kinds of file: ``.txt``, ``.md``, ``.html``, ``.pdf``, ``.docx``, and corpus files (``.jsonl``,
    ``.tsv``); each checked by its content (a binary file named ``.txt`` is refused), text handed on as
    UTF-8. Symbolic links leading outside the folder are not followed; hidden files are passed over
    (``dpr_components/corpus/folder_files.py``).

    Usage example (the first step of ``pipelines/index_files.yml``):

    ```python
    fetcher = FolderFetcher()
    result = fetcher.run(path="my_documents")
    [s.meta["path"] for s in result["sources"]]  # ["guide.pdf", "notes/plan.md"]
    result["skipped"]  # [{"path": "photo.txt", "reason": "not text: it holds a NUL character ..."}]
    ```
    """

    INIT_PARAMETERS = ""

    @component.output_types(
        sources=list[ByteStream], skipped=list[dict[str, str]], present=list[str], other_types=dict[str, int]
    )
    def run(
        self, path: str | None = None, files: list[str] | None = None, uploads: list[ByteStream] | None = None
    ) -> dict[str, Any]:
        """Fetch the documents of the folder ``path``, or only those of ``files``; or the files ``uploads``.

        :param path: the folder (under a server's input root, inside it).
        :param files: paths inside the folder to fetch (the others are not looked at); a path the folder
            does not hold is left out of every output.
        :param uploads: files sent to a server instead of a folder, each a ByteStream with its file name in
            ``meta["file_name"]``, which becomes its path (no folders in it); checked as a folder's files are,
            a file of a kind not indexed refused by name. Not with ``path``.
        :returns: ``sources``: one ByteStream per file, with ``meta`` ``path`` (relative to the folder,
            ``/`` between names), ``file_type``, ``modified`` (ISO 8601, UTC) and ``content_hash`` (SHA-256
            of the bytes) and ``mime_type`` its kind's; ``skipped``: the files refused, as ``{"path",
            "reason"}``; ``present``: the paths of every file of an indexed kind in the folder (refused
            ones included); ``other_types``: how many files of other kinds, by extension.
        :raises ValueError: when ``path`` is not a folder, is outside the input root, or a path of
            ``files`` leaves the folder; when both or neither of ``path`` and ``uploads`` are given.
        """
        if (path is None) == (uploads is None):
            raise ValueError("FolderFetcher: give either path (a folder) or uploads (files sent), not both or neither")
        listing = list_folder(path, only=files) if path is not None else uploaded_files(uploads or [])
        sources = [ByteStream(data=f.data or b"", meta=f.meta(), mime_type=f.kind.mime_type) for f in listing.files]
        return {
            "sources": sources,
            "skipped": refusal_entries(listing.refused),
            "present": listing.present,
            "other_types": dict(sorted(listing.other_types.items())),
        }

    run_async = in_worker_thread(run)
