"""The files of one shard: its embedded passages, streamed in and out.

A shard folder ``shard-00002-of-00008/`` holds:

- ``passages.jsonl``: one passage a line, ``{"id", "content", "meta"}``, in corpus order;
- ``vectors.f32``: their vectors, row ``k`` for line ``k``, little-endian float32, no header;
- ``manifest.json``: the shard, the corpus (SHA-256, line range), the settings that made the
  passages and vectors, the counts, and the byte size and SHA-256 of both files (hashed as
  they are written).

A shard run writes into a temporary folder and renames it into place when complete (see
:func:`dpr_components.utils.atomic_files.atomic_directory`), so a folder with that name is a finished
shard. Reading a shard checks the sizes at once (:func:`read_manifest`) and every passage,
every vector (finite, not all zeros) and both digests while streaming (:func:`shard_passages`), so
a file truncated, zeroed or edited afterwards, even to the same size, is refused.

The digests catch accidents, not tampering: a disk error, a partial copy, an edit or a file
overwritten after the run. Whoever rewrites a file can rewrite its digest in the manifest too, and
the merge then sees a consistent shard; only the value checks (every passage well formed, no vector
all zeros or with NaN or infinity) still apply. Merge only shards you trust."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, TypeGuard, cast

import numpy as np
from haystack import Document

from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.validation import short_repr, strict_json_loads
from dpr_components.utils.vector_checks import unusable_rows, vector_problem

PASSAGES = "passages.jsonl"
VECTORS = "vectors.f32"
MANIFEST = "manifest.json"
FORMAT = "dpr-components shard v2"
OLD_FORMAT = "dpr-components shard v1"  # sizes only, no digests
_FLOAT = np.dtype("<f4")
_BLOCK_ROWS = 1024  # vectors read at a time
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_FIELDS = {"id", "content", "meta"}

FileIdentity = tuple[int, int, int, int]  # device, inode, size, modification time (ns)


class ShardError(ValueError):
    """A shard folder is missing, incomplete, damaged, or does not belong with the others."""


class ShardFolderWriter:
    """Appends embedded passages to ``passages.jsonl`` and ``vectors.f32`` in ``folder``,
    hashing the bytes as it writes them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.dim: int | None = None
        self.passages = 0
        self._files: dict[str, IO[bytes]] = {name: open(folder / name, "wb") for name in (PASSAGES, VECTORS)}  # noqa: SIM115
        self._digests = {name: hashlib.sha256() for name in self._files}

    def write(self, documents: list[Document]) -> None:
        """Append ``documents`` (each with an embedding of the shard's size)."""
        lines = []
        for doc in documents:
            if doc.embedding is None:
                raise ShardError(f"passage {doc.id!r} has no embedding: the shard needs the passage embedder's output")
            if doc.blob is not None or doc.sparse_embedding is not None:
                raise ShardError(f"passage {doc.id!r} has a blob or sparse embedding, which a shard does not keep")
            if self.dim is None:
                self.dim = len(doc.embedding)
            if len(doc.embedding) != self.dim:
                raise ShardError(
                    f"passage {doc.id!r} has a vector of {len(doc.embedding)} values, the others {self.dim}"
                )
            try:
                lines.append(
                    json.dumps(
                        {"id": doc.id, "content": doc.content, "meta": doc.meta}, ensure_ascii=False, allow_nan=False
                    )
                )
            except (TypeError, ValueError) as error:
                raise ShardError(f"passage {doc.id!r}: its meta cannot be written as JSON ({error})") from None
        vectors = np.asarray([doc.embedding for doc in documents], dtype=_FLOAT)
        bad = unusable_rows(vectors.reshape(len(documents), -1))
        if bad.size:
            raise ShardError(
                f"passage {documents[int(bad[0])].id!r}: the encoder returned a vector that "
                f"{vector_problem(vectors[bad[0]])}, which no search can use"
            )
        self._append(PASSAGES, "".join(line + "\n" for line in lines).encode("utf-8"))
        self._append(VECTORS, vectors.tobytes())
        self.passages += len(documents)

    def _append(self, name: str, data: bytes) -> None:
        self._files[name].write(data)
        self._digests[name].update(data)

    def finish(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Flush both files to disk and write the manifest (``manifest`` plus counts, sizes and digests)."""
        for handle in self._files.values():
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
        files = {
            name: {"bytes": (self.folder / name).stat().st_size, "sha256": digest.hexdigest()}
            for name, digest in self._digests.items()
        }
        complete = {"format": FORMAT, **manifest, "passages": self.passages, "dim": self.dim, "files": files}
        atomic_write_text(self.folder / MANIFEST, json.dumps(complete, indent=2, ensure_ascii=False) + "\n")
        return complete

    def close(self) -> None:
        for handle in self._files.values():
            if not handle.closed:
                handle.close()


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of the shard in ``folder``, checked against the sizes of its files."""
    path = folder / MANIFEST
    if not path.is_file():
        raise ShardError(f"shard {folder} is incomplete: it has no {MANIFEST} (its run did not finish); run it again")
    try:
        manifest = strict_json_loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ShardError(f"{path} is not a shard manifest ({error})") from None
    if isinstance(manifest, dict) and manifest.get("format") == OLD_FORMAT:
        raise ShardError(
            f"shard {folder} was written by an earlier version, whose manifest has no file digests to check it by; "
            f"run shard {manifest.get('shard', 'i/N')} again (with the vector cache it re-encodes nothing the cache holds)"
        )
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ShardError(f"{path} is not a shard manifest of this version (expected format {FORMAT!r})")
    passages, dim, files = manifest.get("passages"), manifest.get("dim"), manifest.get("files")
    dim_ok = (_count(dim) and dim > 0) if passages else dim in (None, 0)
    if not _count(passages) or not dim_ok or not isinstance(files, dict):
        raise ShardError(f"{path}: the manifest lacks 'passages', 'dim' or 'files'")
    for name in (PASSAGES, VECTORS):
        entry = files.get(name)
        if not (isinstance(entry, dict) and _count(entry.get("bytes")) and _SHA256.match(str(entry.get("sha256")))):
            raise ShardError(f"{path}: 'files' needs the byte size and SHA-256 of {name}")
    expected = {PASSAGES: files[PASSAGES]["bytes"], VECTORS: passages * (dim or 0) * _FLOAT.itemsize}
    for name, size in expected.items():
        actual = (folder / name).stat().st_size if (folder / name).is_file() else None
        if actual != size or files[name]["bytes"] != size:
            found = "is missing" if actual is None else f"has {actual:,} bytes"
            raise ShardError(
                f"shard {folder}: {name} {found}, its manifest says {files[name]['bytes']:,} bytes; run the shard again"
            )
    return manifest


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def shard_passages(
    folder: Path, manifest: dict[str, Any], opened: dict[str, FileIdentity] | None = None
) -> Iterator[Document]:
    """The passages of the shard in ``folder`` with their vectors, checked as :func:`shard_records` says."""
    for fields, vector in shard_records(folder, manifest, opened):
        yield Document(**fields, embedding=vector.tolist())


def shard_records(
    folder: Path, manifest: dict[str, Any], opened: dict[str, FileIdentity] | None = None
) -> Iterator[tuple[dict[str, Any], np.ndarray]]:
    """The passages (``id``, ``content``, ``meta``) of the shard in ``folder`` (its manifest from
    :func:`read_manifest`) with their vectors, in the order they were written. Each passage is
    checked (an object with a non-empty string id, text or null content, a meta object), each
    vector too (finite values), the counts against the manifest, and, once the files are read to
    the end, their SHA-256 digests: read a shard to the end before trusting any of it.

    :param opened: identities of both files from an earlier read: recorded when empty, compared
        when not, so a shard replaced or rewritten between two reads is refused."""
    where = f"shard {manifest.get('shard')} ({folder})"
    digests = {name: hashlib.sha256() for name in (PASSAGES, VECTORS)}
    with open(folder / PASSAGES, "rb") as text, open(folder / VECTORS, "rb") as vectors:
        _check_identity({PASSAGES: text, VECTORS: vectors}, opened, where)
        rows = _vector_rows(vectors, manifest["dim"] or 0, manifest["passages"], digests[VECTORS], where)
        count = 0
        for count, line in enumerate(text, start=1):
            if count > manifest["passages"]:
                raise ShardError(
                    f"{where}: {PASSAGES} has more lines than the {manifest['passages']:,} passages of its manifest"
                )
            digests[PASSAGES].update(line)
            fields = _passage_fields(line, f"{where}: {PASSAGES} line {count}")
            vector, usable = next(rows)
            if not usable:
                raise ShardError(
                    f"{where}: {VECTORS} row {count} (passage {fields['id']!r}) {vector_problem(vector)}, "
                    "which no search can use; run the shard again"
                )
            yield fields, vector
        if count != manifest["passages"]:
            raise ShardError(
                f"{where}: {PASSAGES} has {count:,} lines, its manifest says {manifest['passages']:,} passages"
            )
        if vectors.read(1):
            raise ShardError(
                f"{where}: {VECTORS} is longer than the {manifest['passages']:,} rows of its manifest; run the shard again"
            )
    for name, digest in digests.items():
        recorded = manifest["files"][name]["sha256"]
        if digest.hexdigest() != recorded:
            raise ShardError(
                f"{where}: {name} is not the file the shard run wrote (SHA-256 {digest.hexdigest()[:12]}..., "
                f"its manifest says {recorded[:12]}...); run the shard again"
            )


def _check_identity(handles: dict[str, IO[bytes]], opened: dict[str, FileIdentity] | None, where: str) -> None:
    if opened is None:
        return
    for name, handle in handles.items():
        status = os.fstat(handle.fileno())
        identity = (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)
        if opened.setdefault(name, identity) != identity:
            raise ShardError(
                f"{where}: {name} was replaced or changed since it was checked (a shard run again during the merge?); merge again"
            )


def _vector_rows(handle: IO[bytes], dim: int, rows: int, digest: Any, where: str) -> Iterator[tuple[np.ndarray, bool]]:
    """The ``rows`` vectors of ``handle``, each with whether a search can use it (finite, not all
    zeros), read ``_BLOCK_ROWS`` at a time and hashed into ``digest``."""
    row_bytes = dim * _FLOAT.itemsize
    done = 0
    while done < rows:
        wanted = min(_BLOCK_ROWS, rows - done)
        block = handle.read(wanted * row_bytes)
        digest.update(block)
        if len(block) != wanted * row_bytes:
            raise ShardError(
                f"{where}: {VECTORS} ends within row {done + len(block) // row_bytes + 1:,}, its manifest says {rows:,} rows"
            )
        vectors = np.frombuffer(block, dtype=_FLOAT).reshape(wanted, dim)
        usable = np.ones(wanted, dtype=np.bool_)
        usable[unusable_rows(vectors)] = False
        yield from zip(vectors, cast(list[bool], usable.tolist()), strict=True)
        done += wanted


def _passage_fields(line: bytes, where: str) -> dict[str, Any]:
    """``id``, ``content`` and ``meta`` of one line of ``passages.jsonl``, checked."""
    try:
        record = strict_json_loads(line.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ShardError(f"{where}: not UTF-8 ({error.reason} at byte {error.start})") from None
    except ValueError as error:
        raise ShardError(f"{where}: not a shard passage ({error})") from None
    if not isinstance(record, dict) or set(record) != _FIELDS:
        raise ShardError(
            f"{where}: not a shard passage (an object with exactly id, content and meta), got {short_repr(line.decode('utf-8'))}"
        )
    if not isinstance(record["id"], str) or not record["id"]:
        raise ShardError(f"{where}: the passage id must be a non-empty string, got {short_repr(record['id'])}")
    if record["content"] is not None and not isinstance(record["content"], str):
        raise ShardError(f"{where}: passage {record['id']!r} has content {short_repr(record['content'])}, not text")
    if not isinstance(record["meta"], dict):
        raise ShardError(f"{where}: passage {record['id']!r} has meta {short_repr(record['meta'])}, not an object")
    return record
