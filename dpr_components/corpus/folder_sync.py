"""Keeping a store in step with a folder: which files to index, which passages to remove.

Every passage of a folder's file carries the file's path and the SHA-256 of its bytes
(``meta["path"]``, ``meta["content_hash"]``). A run compares the folder with the store, file by file:

- **new**: a path the store does not hold: indexed;
- **changed**: a path whose passages carry another hash (or several: left by an interrupted run of
  another writer): its old passages are removed, then the file is indexed;
- **unchanged**: every passage carries the file's hash: not converted or encoded again; a new
  modification time alone is written into its passages' ``meta["modified"]``;
- **gone**: a path the store holds that the folder no longer has: its passages are removed, unless
  ``keep_removed``. A file still in the folder but refused (unreadable now) keeps what it had.

A rename is a file gone and a new one (its vectors come back from the embedding cache). The passages
of gone and changed files are removed before anything is indexed, in one delete, and each file's
passages are then written in one write, so a run killed at any point leaves every file absent, with
its old passages or with all its new ones: the next run sees the first two as new or changed and ends
with the store one uninterrupted run gives. Only passages with a ``content_hash`` are looked at: a
store may also hold documents indexed from corpus files, which a folder's run leaves alone."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from haystack import Document

from dpr_components.corpus.folder_files import HASH_KEY, MODIFIED_KEY, PATH_KEY
from dpr_components.store_access.search_backend import is_embedded_store

MANAGED: dict[str, Any] = {"field": f"meta.{HASH_KEY}", "operator": "!=", "value": None}
_PATHS_PER_FILTER = 200  # bounded filters, for any store


@dataclass(frozen=True)
class FileVersion:
    """A file as it is in the folder now."""

    sha256: str
    modified: str


@dataclass
class StoredFile:
    """A file as the store holds it: its passages' ids and the hashes and modification times they carry."""

    passage_ids: list[str] = field(default_factory=list)
    hashes: set[str] = field(default_factory=set)
    modified: set[str] = field(default_factory=set)


@dataclass
class SyncPlan:
    """What a run does: ``index`` (new and changed files), ``unchanged`` ones (of which ``touched`` have a
    new modification time), ``gone`` ones, and the passages to delete first (of changed files, and of gone
    ones unless they are kept)."""

    index: list[str]
    unchanged: list[str]
    touched: dict[str, str]
    gone: list[str]
    delete_ids: list[str]
    keep_removed: bool

    @property
    def removed(self) -> list[str]:
        """The gone files whose passages are removed."""
        return [] if self.keep_removed else self.gone

    @property
    def kept(self) -> list[str]:
        """The gone files whose passages are kept (``keep_removed``)."""
        return self.gone if self.keep_removed else []


def plan_sync(
    current: Mapping[str, FileVersion],
    present: Iterable[str],
    stored: Mapping[str, StoredFile],
    keep_removed: bool,
    scope: Collection[str] | None = None,
) -> SyncPlan:
    """The plan (see the module docstring) for the files of the folder to index (``current``), the paths of
    the folder's files including the refused ones (``present``) and the files the store holds; with ``scope``
    (the files a run was given) only those paths can be gone."""
    in_folder = set(present) | set(current)
    index: list[str] = []
    unchanged: list[str] = []
    touched: dict[str, str] = {}
    delete: list[str] = []
    for path in sorted(current):
        version, old = current[path], stored.get(path)
        if old is None:
            index.append(path)
        elif old.hashes == {version.sha256}:
            unchanged.append(path)
            if old.modified != {version.modified}:
                touched[path] = version.modified
        else:
            index.append(path)
            delete.extend(old.passage_ids)
    gone = sorted(p for p in stored if p not in in_folder and (scope is None or p in scope))
    if not keep_removed:
        delete.extend(passage for path in gone for passage in stored[path].passage_ids)
    return SyncPlan(index, unchanged, touched, gone, delete, keep_removed)


def stored_files(store: Any, paths: Collection[str] | None = None) -> dict[str, StoredFile]:
    """The folder files ``store`` holds, by path: all of them, or those of ``paths``."""
    if paths is None:
        if not is_embedded_store(store):
            return _grouped(store.filter_documents(filters=MANAGED))
        _, total = store.get_metadata_field_unique_values(PATH_KEY, size=0, filters=MANAGED)
        values, _ = store.get_metadata_field_unique_values(PATH_KEY, size=total, filters=MANAGED)
        paths = [value for value in values if isinstance(value, str)]
    ordered = sorted(set(paths))
    found: dict[str, StoredFile] = {}
    for start in range(0, len(ordered), _PATHS_PER_FILTER):
        chunk = {"field": f"meta.{PATH_KEY}", "operator": "in", "value": ordered[start : start + _PATHS_PER_FILTER]}
        found.update(_grouped(store.filter_documents(filters={"operator": "AND", "conditions": [MANAGED, chunk]})))
    return found


def _grouped(passages: list[Document]) -> dict[str, StoredFile]:
    files: dict[str, StoredFile] = {}
    for passage in passages:
        path = passage.meta.get(PATH_KEY)
        if not isinstance(path, str):
            continue
        stored = files.setdefault(path, StoredFile())
        stored.passage_ids.append(passage.id)
        stored.hashes.add(str(passage.meta.get(HASH_KEY)))
        stored.modified.add(str(passage.meta.get(MODIFIED_KEY)))
    return files


def apply_plan(store: Any, plan: SyncPlan) -> None:
    """Delete the plan's passages (one call), then write the new modification times of touched files
    (where the store can update metadata by filter; elsewhere they stay until the file changes)."""
    if plan.delete_ids:
        store.delete_documents(plan.delete_ids)
    update = getattr(store, "update_by_filter", None)
    if callable(update):
        for path, modified in plan.touched.items():
            update(
                filters={"field": f"meta.{PATH_KEY}", "operator": "==", "value": path}, meta={MODIFIED_KEY: modified}
            )
