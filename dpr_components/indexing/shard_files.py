"""The files of one shard: its embedded passages, streamed in and out.

A shard folder ``shard-00002-of-00008/`` holds:

- ``passages.jsonl``: one passage a line, ``{"id", "content", "meta"}``, in corpus order;
- ``vectors.f32``: their vectors, row ``k`` for line ``k``, little-endian float32, no header;
- ``manifest.json``: the shard, the corpus (SHA-256, line range), the settings that made the
  passages and vectors, and the counts and byte sizes of both files.

A shard run writes into a temporary folder and renames it into place when complete (see
:func:`dpr_components.io_utils.atomic_directory`), so a folder with that name is a finished
shard; the sizes in the manifest catch a file truncated or replaced afterwards."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
from haystack import Document

from dpr_components.io_utils import atomic_write_text

PASSAGES = "passages.jsonl"
VECTORS = "vectors.f32"
MANIFEST = "manifest.json"
FORMAT = "dpr-components shard v1"
_FLOAT = np.dtype("<f4")


class ShardError(ValueError):
    """A shard folder is missing, incomplete, damaged, or does not belong with the others."""


class ShardFolderWriter:
    """Appends embedded passages to ``passages.jsonl`` and ``vectors.f32`` in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.dim: int | None = None
        self.passages = 0
        self._text: IO[str] = open(folder / PASSAGES, "w", encoding="utf-8", newline="\n")
        self._vectors: IO[bytes] = open(folder / VECTORS, "wb")

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
                raise ShardError(f"passage {doc.id!r} has a vector of {len(doc.embedding)} values, the others {self.dim}")
            try:
                lines.append(json.dumps({"id": doc.id, "content": doc.content, "meta": doc.meta}, ensure_ascii=False, allow_nan=False))
            except (TypeError, ValueError) as error:
                raise ShardError(f"passage {doc.id!r}: its meta cannot be written as JSON ({error})") from None
        vectors = np.asarray([doc.embedding for doc in documents], dtype=_FLOAT)
        if vectors.size and not np.isfinite(vectors).all():
            raise ShardError("the encoder returned vectors with NaN or infinite values")
        self._text.write("".join(line + "\n" for line in lines))
        self._vectors.write(vectors.tobytes())
        self.passages += len(documents)

    def finish(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Flush both files to disk and write the manifest (``manifest`` plus counts and sizes)."""
        for handle in (self._text, self._vectors):
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
        complete = {
            "format": FORMAT, **manifest, "passages": self.passages, "dim": self.dim,
            "files": {name: (self.folder / name).stat().st_size for name in (PASSAGES, VECTORS)},
        }
        atomic_write_text(self.folder / MANIFEST, json.dumps(complete, indent=2, ensure_ascii=False) + "\n")
        return complete

    def close(self) -> None:
        for handle in (self._text, self._vectors):
            if not handle.closed:
                handle.close()


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of the shard in ``folder``, checked against the sizes of its files."""
    path = folder / MANIFEST
    if not path.is_file():
        raise ShardError(f"shard {folder} is incomplete: it has no {MANIFEST} (its run did not finish); run it again")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ShardError(f"{path} is not a shard manifest ({error})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ShardError(f"{path} is not a shard manifest of this version (expected format {FORMAT!r})")
    passages, dim, files = manifest.get("passages"), manifest.get("dim"), manifest.get("files")
    if not isinstance(passages, int) or not isinstance(files, dict) or (passages and not isinstance(dim, int)):
        raise ShardError(f"{path}: the manifest lacks 'passages', 'dim' or 'files'")
    expected = {PASSAGES: files.get(PASSAGES), VECTORS: passages * (dim or 0) * _FLOAT.itemsize}
    for name, size in expected.items():
        actual = (folder / name).stat().st_size if (folder / name).is_file() else None
        if actual != size:
            found = "is missing" if actual is None else f"has {actual:,} bytes"
            raise ShardError(f"shard {folder}: {name} {found}, its manifest says {size:,} bytes; run the shard again")
    return manifest


def shard_passages(folder: Path, manifest: dict[str, Any]) -> Iterator[Document]:
    """The passages of the shard in ``folder`` with their vectors, in the order they were written."""
    dim = manifest["dim"] or 0
    row_bytes = dim * _FLOAT.itemsize
    count = 0
    with open(folder / PASSAGES, encoding="utf-8") as text, open(folder / VECTORS, "rb") as vectors:
        for number, line in enumerate(text, start=1):
            if number > manifest["passages"]:
                raise ShardError(f"{folder / PASSAGES}: more lines than the {manifest['passages']:,} passages of its manifest")
            try:
                record = json.loads(line)
                fields = {"id": record["id"], "content": record["content"], "meta": record["meta"]}
            except (json.JSONDecodeError, KeyError, TypeError) as error:
                raise ShardError(f"{folder / PASSAGES}:{number}: not a shard passage ({error})") from None
            vector = np.frombuffer(vectors.read(row_bytes), dtype=_FLOAT)
            count = number
            yield Document(**fields, embedding=vector.tolist())
    if count != manifest["passages"]:
        raise ShardError(f"{folder / PASSAGES}: {count:,} lines, its manifest says {manifest['passages']:,} passages")
