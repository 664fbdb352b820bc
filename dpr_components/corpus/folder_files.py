"""The documents of a folder, listed safely: every file of a kind in :mod:`~dpr_components.corpus.file_types`,
with its path in the folder, kind (checked by content), size, modification time and content hash.

The folder is walked in name order, so two listings of the same folder agree. Hidden files and folders
(a name starting with ``.``: ``.git``, editor files) are passed over. A symbolic link is followed only
when it leads to a place inside the folder (each folder is walked once, so a link cannot loop); one
leading outside is refused and named, and under a server's input root (``DPR_INPUT_ROOT``) no link is
followed at all, as for every input file there. A file that is refused (not what its extension says,
unreadable, larger than ``MAX_FILE_BYTES``, a path that cannot be a document id) is named with its
reason and the listing goes on; files of other kinds are only counted, by extension.

The hash is SHA-256 of the file's bytes as read: the content that is indexed is the content hashed."""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

from haystack.dataclasses import ByteStream

from dpr_components.corpus.file_types import (
    MAX_FILE_BYTES,
    SUFFIXES,
    ContentRefused,
    FileType,
    checked_content,
    file_type_of,
    suffix_of,
)
from dpr_components.corpus.record_ids import record_id_problem
from dpr_components.utils.input_files import check_input_path, input_root, open_input_file

PATH_KEY, TYPE_KEY, MODIFIED_KEY, HASH_KEY = "path", "file_type", "modified", "content_hash"
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True)
class FolderFile:
    """A file of the folder to index: ``path`` relative to the folder with ``/`` between names; ``data`` the
    bytes its converter is given (``None`` when listed without them)."""

    path: str
    kind: FileType
    size: int
    modified: str
    sha256: str
    data: bytes | None = None

    def meta(self) -> dict[str, Any]:
        """The metadata every passage of the file carries."""
        return {PATH_KEY: self.path, TYPE_KEY: self.kind.name, MODIFIED_KEY: self.modified, HASH_KEY: self.sha256}


@dataclass(frozen=True)
class Refusal:
    """A file that is not indexed, and why (the end of a line naming it)."""

    path: str
    reason: str


@dataclass
class FolderListing:
    """What a walk of the folder found: the files to index, the files refused, other files by extension."""

    files: list[FolderFile] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    other_types: Counter[str] = field(default_factory=Counter)

    def add(self, examined: FolderFile | Refusal) -> None:
        """A file examined: to index, or refused."""
        if isinstance(examined, Refusal):
            self.refused.append(examined)
        else:
            self.files.append(examined)

    def in_order(self) -> FolderListing:
        """The listing with its files and refusals in path order."""
        self.files.sort(key=lambda f: f.path)
        self.refused.sort(key=lambda r: r.path)
        return self

    @property
    def present(self) -> list[str]:
        """Every file of an indexed kind that is in the folder, indexed or refused."""
        return sorted({f.path for f in self.files} | {r.path for r in self.refused})


def refusal_entries(refusals: Iterable[Refusal]) -> list[dict[str, str]]:
    """Refusals as the ``{"path", "reason"}`` objects components output."""
    return [{"path": r.path, "reason": r.reason} for r in refusals]


def uploaded_files(uploads: Iterable[ByteStream]) -> FolderListing:
    """The listing of files sent to a server, each checked by :func:`uploaded_file` (its name from
    ``meta["file_name"]``, received now); a name sent twice is refused (neither copy is indexed)."""
    received = time.time()
    listing = FolderListing()
    examined = [uploaded_file(str((u.meta or {}).get("file_name") or ""), u.data, received) for u in uploads]
    names = Counter(f.path for f in examined)
    for found in examined:
        if names[found.path] == 1:
            listing.add(found)
        elif all(r.path != found.path for r in listing.refused):
            listing.add(Refusal(found.path, "sent more than once in one request: send each file once"))
    return listing.in_order()


def open_folder(path: str) -> str:
    """The real path of the folder ``path``; ``ValueError`` in one line when it is not a folder one may read."""
    text = check_input_path(path, "folder")
    if not os.path.exists(text):
        raise ValueError(f"folder {text} does not exist")
    if not os.path.isdir(text):
        raise ValueError(
            f"{text} is a file, not a folder; give the folder of your documents "
            "(a corpus file is indexed with: haystack run index --input path=FILE)"
        )
    return os.path.realpath(text)


def list_folder(path: str, only: list[str] | None = None, keep_data: bool = True) -> FolderListing:
    """The documents of the folder ``path`` (see the module docstring); with ``only``, just those of its files
    (paths relative to the folder; a name missing from the folder is left out, neither listed nor refused).

    :param keep_data: keep each file's bytes for its converter (else only its hash is kept)."""
    root = open_folder(path)
    listing = FolderListing()
    candidates = _walk(root, listing) if only is None else _named(root, only, listing)
    for relative, real in candidates:
        kind = file_type_of(relative.rsplit("/", 1)[-1])
        if kind is None:
            listing.other_types[suffix_of(relative.rsplit("/", 1)[-1])] += 1
            continue
        listing.add(_examine(relative, real, kind, keep_data))
    return listing.in_order()


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _walk(root: str, listing: FolderListing) -> Iterator[tuple[str, str]]:
    """``(relative path, real path)`` of each file below ``root``; refused links go to ``listing``."""
    no_links = input_root() is not None
    visited = {root}
    folders = [("", root)]
    while folders:
        prefix, folder = folders.pop()
        try:
            with os.scandir(folder) as found:
                entries = sorted(found, key=lambda e: e.name)
        except OSError as error:
            listing.refused.append(Refusal(prefix.rstrip("/") or ".", f"cannot be read ({_os_reason(error)})"))
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            relative, real = f"{prefix}{entry.name}", entry.path
            if entry.is_symlink():
                real = os.path.realpath(entry.path)
                problem = _link_problem(real, root, no_links)
                if problem:
                    listing.refused.append(Refusal(relative, problem))
                    continue
            if os.path.isdir(real):
                if real not in visited:
                    visited.add(real)
                    folders.append((f"{relative}/", real))
            else:
                yield relative, real


def _link_problem(real: str, root: str, no_links: bool) -> str | None:
    """Why a symbolic link resolving to ``real`` is not followed, or ``None``."""
    if no_links:
        return "a symbolic link, which is not followed under the input root"
    if not _inside(real, root):
        return "a symbolic link leading outside the folder, which is not followed"
    if not os.path.exists(real):
        return "a symbolic link to nothing (its target is missing)"
    return None


def _named(root: str, only: list[str], listing: FolderListing) -> Iterator[tuple[str, str]]:
    """``(relative path, real path)`` of each file of ``only`` that is in the folder."""
    no_links = input_root() is not None
    for relative in only:
        parts = PurePosixPath(relative).parts
        if not parts or PurePosixPath(relative).is_absolute() or ".." in parts:
            raise ValueError(f"files: {relative!r} is not a path inside the folder (no '..', not absolute)")
        joined = os.path.join(root, *parts)
        real = os.path.realpath(joined)
        if not os.path.lexists(joined):
            continue
        if real != joined:
            problem = _link_problem(real, root, no_links)
            if problem:
                listing.refused.append(Refusal(relative, problem))
                continue
        yield relative, real


def _examine(relative: str, real: str, kind: FileType, keep_data: bool) -> FolderFile | Refusal:
    """The file at ``real`` read, hashed and checked by content, or why it is refused."""
    problem = record_id_problem(relative)
    if problem:
        return Refusal(relative, f"its path cannot be a document id: it {problem}")
    try:
        raw, found = _read(real)
    except ContentRefused as refused:
        return Refusal(relative, str(refused))
    except ValueError as error:  # refused by the input root's rule (a hard link)
        return Refusal(relative, str(error))
    except OSError as error:
        return Refusal(relative, f"cannot be read ({_os_reason(error)})")
    return _checked(relative, kind, raw, found.st_mtime, keep_data)


def _checked(relative: str, kind: FileType, raw: bytes, mtime: float, keep_data: bool) -> FolderFile | Refusal:
    """``raw`` checked by content as a file of ``kind``, or why it is refused."""
    try:
        data = checked_content(kind, raw)
    except ContentRefused as refused:
        return Refusal(relative, str(refused))
    modified = datetime.fromtimestamp(mtime, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    digest = hashlib.sha256(raw).hexdigest()
    return FolderFile(relative, kind, len(raw), modified, digest, data if keep_data else None)


def upload_name_problem(name: str) -> str | None:
    """Why an uploaded file's name cannot be its path in the store, or ``None``: a bare file name of a kind
    indexed (a client's folders are not kept: ``notes/plan.md`` is refused, not flattened)."""
    if not name or name in (".", "..") or "/" in name or "\\" in name:
        return "is not a file name (no folders, not empty)"
    if name.startswith("."):
        return "is a hidden file's name (it starts with '.')"
    if file_type_of(name) is None:
        return f"is not of a kind indexed ({suffix_of(name)}; the kinds indexed: {' '.join(SUFFIXES)})"
    problem = record_id_problem(name)
    return f"cannot be a document id: it {problem}" if problem else None


def uploaded_file(name: str, raw: bytes, received: float) -> FolderFile | Refusal:
    """A file sent to the server (``name`` as the client gave it, ``received`` its time as a timestamp),
    checked as a folder's file is: by its name's kind, its size and its content."""
    problem = upload_name_problem(name)
    if problem:
        return Refusal(name or "(no name)", f"its name {problem}")
    if len(raw) > MAX_FILE_BYTES:
        return Refusal(name, f"{len(raw):,} bytes, over the limit of {MAX_FILE_BYTES:,} bytes a file")
    kind = file_type_of(name)
    assert kind is not None  # upload_name_problem refuses other kinds
    return _checked(name, kind, raw, received, keep_data=True)


def _read(real: str) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at ``real`` (the path already resolved, so a link is not followed)."""
    handle = open_input_file(real, "file") if input_root() is not None else os.fdopen(os.open(real, _OPEN_FLAGS), "rb")
    with handle:
        found = os.fstat(handle.fileno())
        if not stat.S_ISREG(found.st_mode):
            raise ContentRefused("not a regular file")
        if found.st_size > MAX_FILE_BYTES:
            raise ContentRefused(f"{found.st_size:,} bytes, over the limit of {MAX_FILE_BYTES:,} bytes a file")
        os.set_blocking(handle.fileno(), True)
        raw = handle.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        raise ContentRefused(f"over the limit of {MAX_FILE_BYTES:,} bytes a file")
    return raw, found


def _os_reason(error: OSError) -> str:
    return (error.strerror or str(error)).lower()
