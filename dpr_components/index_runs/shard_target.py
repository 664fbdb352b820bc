"""Where a merge writes: a new embedded store is built beside its folder and renamed into place.

When the writer's store is an :class:`EmbeddedDocumentStore` whose folder does not exist yet
(or is empty), the merge writes into ``.<name>.merging`` beside it, through a copy of the
writer on that folder, saves the store's indexes there, closes it, and renames the folder into
place. Killed or failed midway, it leaves no folder at the target; the next merge into the same
target deletes the dead ``.<name>.merging``. A lock on ``.<name>.merge.lock`` (an empty file
that stays beside the store) keeps two merges into one folder apart, and tells a live merge's
folder from a dead one's.

Any other store (an existing embedded store, Elasticsearch, ...) is written in place, one
transaction of the store per batch: see :func:`dpr_components.index_runs.shard_merge.merge_shards`."""

from __future__ import annotations

import contextlib
import copy
import fcntl
import gc
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dpr_components.index_runs.shard_files import ShardError
from dpr_components.utils.fault_points import fault_point
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

_OPEN_LOG = "documents.sqlite-wal"  # SQLite removes it when the last connection closes


def new_store_folder(writer: Any) -> Path | None:
    """The folder of the writer's embedded store if that store is to be created (missing or empty folder), else ``None``."""
    store = getattr(writer, "document_store", None)
    if not isinstance(store, EmbeddedDocumentStore) or store.path is None:
        return None
    folder = Path(store.path)
    return folder if _is_new(folder) else None


def _is_new(folder: Path) -> bool:
    return not folder.exists() or (folder.is_dir() and not any(folder.iterdir()))


def writer_on(writer: Any, folder: Path) -> Any:
    """A writer like ``writer`` on a store like its store, in ``folder``, that saves its indexes
    only when asked (``save()``): never from a finaliser after the folder was given up."""
    settings = {**writer.document_store.to_dict()["init_parameters"], "path": str(folder), "autosave": False}
    builder = copy.copy(writer)
    builder.document_store = EmbeddedDocumentStore(**settings)
    return builder


@contextlib.contextmanager
def store_built_beside(target: Path) -> Iterator[Path]:
    """Yield an empty folder beside ``target`` to build the store in; when the block ends without
    an error (every handle on the store there dropped), rename it to ``target``; otherwise delete it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    building = target.parent / f".{target.name}.merging"
    with _merge_lock(target):
        if not _is_new(target):
            raise ShardError(
                f"{target} was created by another process as this merge started; merge again (into the store it now is)"
            )
        shutil.rmtree(building, ignore_errors=True)  # left by a merge that was killed (it no longer holds the lock)
        building.mkdir()
        try:
            yield building
            _close_stores()
            if (building / _OPEN_LOG).exists():
                raise ShardError(
                    f"the merged store in {building} is still open in this process; it was not moved to {target}"
                )
            fault_point("shard_merge.before_rename")
            _rename(building, target)
        finally:
            shutil.rmtree(building, ignore_errors=True)


@contextlib.contextmanager
def _merge_lock(target: Path) -> Iterator[None]:
    lock = target.parent / f".{target.name}.merge.lock"
    with open(lock, "ab") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ShardError(f"another merge into {target} is running (it holds {lock}); let it finish") from None
        yield


def _close_stores() -> None:
    # The store's backend is shared per folder while any handle on it lives; once the caller's
    # handles are gone, collecting them closes its database, which folds its log back in.
    gc.collect()


def _rename(building: Path, target: Path) -> None:
    try:
        os.rename(building, target)  # replaces an empty folder, nothing else
    except OSError:
        if not _is_new(target):
            raise ShardError(
                f"{target} was created by another process during the merge; merge again (into the store it now is)"
            ) from None
        raise
    with contextlib.suppress(OSError):  # the rename is durable once its folder is synced (where folders can be)
        folder = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
