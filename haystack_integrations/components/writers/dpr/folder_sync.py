"""Keeps a store in step with a folder: passes on the files that are new or changed, removes the passages of
changed files and of files gone from the folder, and leaves unchanged files alone (by content hash)."""

from __future__ import annotations

from typing import Any

from haystack import component, default_to_dict
from haystack.dataclasses import ByteStream
from haystack.document_stores.types import DocumentStore

from dpr_components.corpus.folder_files import HASH_KEY, MODIFIED_KEY, PATH_KEY
from dpr_components.corpus.folder_sync import FileVersion, SyncPlan, apply_plan, plan_sync, stored_files
from dpr_components.store_access.serialization import from_dict_with_store
from dpr_components.utils.worker_threads import in_worker_thread


@component
class FolderSync:
    """Keeps a store in step with a folder: passes on the files that are new or changed, removes the passages
    of changed files and of files gone from the folder, and leaves unchanged files alone (by content hash).

    A file's passages carry its ``meta["path"]`` and ``meta["content_hash"]``; the rules, and why a run
    killed at any point and run again gives the store of one uninterrupted run, are in
    ``dpr_components/corpus/folder_sync.py``.

    :param document_store: the store the folder is indexed into (any store with ``filter_documents`` and
        ``delete_documents``).
    :param keep_removed: keep the passages of files gone from the folder (default: remove them).

    Usage example (the second step of ``pipelines/index_files.yml``):

    ```python
    from haystack_integrations.components.fetchers.dpr import FolderFetcher
    from haystack_integrations.document_stores.dpr import EmbeddedDocumentStore

    fetched = FolderFetcher().run(path="my_documents")
    sync = FolderSync(document_store=EmbeddedDocumentStore(path="indexes/my_documents"))
    result = sync.run(sources=fetched["sources"], present=fetched["present"])
    result["sources"]  # the files to convert and index: new or changed
    result["unchanged"], result["removed"]  # paths
    ```
    """

    def __init__(self, *, document_store: DocumentStore, keep_removed: bool = False) -> None:
        for method in ("filter_documents", "delete_documents"):
            if not callable(getattr(document_store, method, None)):
                raise ValueError(
                    f"FolderSync needs a document store with {method}(), got {type(document_store).__name__}"
                )
        if not isinstance(keep_removed, bool):
            raise ValueError(f"keep_removed must be true or false, got {keep_removed!r}")
        self.document_store = document_store
        self.keep_removed = keep_removed

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, document_store=self.document_store.to_dict(), keep_removed=self.keep_removed)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FolderSync:
        return from_dict_with_store(cls, data)

    def plan(
        self,
        current: dict[str, FileVersion],
        present: list[str],
        files: list[str] | None = None,
        keep_removed: bool | None = None,
    ) -> SyncPlan:
        """What a run on these files does (nothing done yet): see :func:`plan_sync`."""
        keep = self.keep_removed if keep_removed is None else keep_removed
        if not isinstance(keep, bool):
            raise ValueError(f"keep_removed must be true or false, got {keep!r}")
        if files is None and not present and not current:
            raise ValueError(
                "the folder holds no file of a kind indexed, so nothing is indexed and nothing removed from the "
                "store (an empty or mistyped folder must not empty it)"
            )
        stored = stored_files(self.document_store, None if files is None else [*files, *current])
        return plan_sync(current, present, stored, keep, scope=files)

    def apply(self, plan: SyncPlan) -> None:
        """Remove the plan's passages and write the new modification times of touched files."""
        apply_plan(self.document_store, plan)

    @component.output_types(sources=list[ByteStream], unchanged=list[str], removed=list[str], kept=list[str])
    def run(
        self,
        sources: list[ByteStream],
        present: list[str],
        files: list[str] | None = None,
        keep_removed: bool | None = None,
    ) -> dict[str, Any]:
        """Remove what is stale and pass on the files to index.

        :param sources: the folder's files, with ``meta`` ``path``, ``content_hash`` and ``modified`` (as
            ``FolderFetcher`` gives them).
        :param present: the paths of every file in the folder (refused ones too: they keep their passages).
        :param files: when the run covers only these paths of the folder, only they can be gone.
        :param keep_removed: overrides the init parameter for this run.
        :returns: ``sources``: the new and changed files, in path order; ``unchanged``: the paths not
            indexed again; ``removed``: the paths gone from the folder whose passages were deleted;
            ``kept``: those gone whose passages were kept (``keep_removed``).
        :raises ValueError: when a source lacks its ``path`` or ``content_hash``, or the folder holds no file
            of a kind indexed (nothing is removed then: a mistyped folder must not empty the store).
        """
        by_path = {}
        for index, source in enumerate(sources):
            if not isinstance(source.meta.get(PATH_KEY), str) or not isinstance(source.meta.get(HASH_KEY), str):
                raise ValueError(
                    f"sources[{index}] has no meta 'path' and 'content_hash' (give FolderFetcher's sources)"
                )
            by_path[source.meta[PATH_KEY]] = source
        current = {
            path: FileVersion(s.meta[HASH_KEY], str(s.meta.get(MODIFIED_KEY, ""))) for path, s in by_path.items()
        }
        plan = self.plan(current, present, files, keep_removed)
        self.apply(plan)
        return {
            "sources": [by_path[path] for path in plan.index],
            "unchanged": plan.unchanged,
            "removed": plan.removed,
            "kept": plan.kept,
        }

    run_async = in_worker_thread(run)
