"""One rule for the files that run-time inputs name: with ``DPR_INPUT_ROOT`` set, only files inside it.

A served pipeline takes its inputs from HTTP clients; a ``path`` input would otherwise let any
client make the server read any file it can (keys, other users' data). The server sets the root
(``haystack serve --input-root``); the command line leaves it unset and reads what the user names.

Under a root, :func:`open_input_file` walks the path from a descriptor of the root, one component
at a time, each opened with ``O_NOFOLLOW`` relative to the folder opened before it. No name is
looked up again after a check, so nothing swapped in the root (a symlink, a renamed folder) can
lead the open out of it: symbolic links are not followed at all, ``..`` is refused, and the file
must be a regular file with one link (a hard link is another name of a file that may live
outside the root; ``DPR_INPUT_HARD_LINKS=allow`` lets them in). :func:`check_input_path` gives
the same answer early, before any work starts, without opening anything."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePath
from typing import BinaryIO

INPUT_ROOT_ENV = "DPR_INPUT_ROOT"
HARD_LINKS_ENV = "DPR_INPUT_HARD_LINKS"
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO planted in the root must not hang the server; the file is checked regular after.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def input_root() -> Path | None:
    """The folder every run-time input file must be in, or ``None`` when any file may be read."""
    root = os.environ.get(INPUT_ROOT_ENV, "").strip()
    return Path(os.path.realpath(root)) if root else None


def hard_links_allowed() -> bool:
    """Whether files with more than one name may be read under the root (``DPR_INPUT_HARD_LINKS=allow``)."""
    value = os.environ.get(HARD_LINKS_ENV, "").strip().lower()
    if value not in ("", "allow", "refuse"):
        raise ValueError(f"{HARD_LINKS_ENV}={value!r}: must be 'allow' or 'refuse' (the default)")
    return value == "allow"


def _configured_root() -> str:
    # The root as configured, not resolved: an HTTP client learns no absolute server path.
    return os.environ[INPUT_ROOT_ENV].strip()


def _outside_root(text: str, what: str) -> ValueError:
    return ValueError(
        f"{what} {text!r} is outside the input root {_configured_root()!r} ({INPUT_ROOT_ENV}); "
        f"put the file inside that folder and give its path"
    )


def _refused(text: str, what: str, problem: str) -> ValueError:
    return ValueError(f"{what} {text!r} {problem} under the input root {_configured_root()!r} ({INPUT_ROOT_ENV})")


def _parts_inside(text: str, root: Path, what: str) -> tuple[Path, tuple[str, ...]]:
    """The root ``text`` is under and its components below it; ``ValueError`` when it names a place
    outside the root or uses ``..``.

    Only the name is read here: the root is compared both as configured and resolved, so a root
    given through a symlink (``/tmp`` on some systems) still matches the paths users give. The
    root itself is the server's setting, trusted as it is: the walk starts at it."""
    if ".." in PurePath(text).parts:
        raise _refused(text, what, "contains '..', which is not followed")
    absolute = Path(os.path.abspath(text))
    for base in (Path(os.path.abspath(_configured_root())), root):
        if absolute == base or base in absolute.parents:
            return base, absolute.relative_to(base).parts
    raise _outside_root(text, what)


def _why_not_opened(folder: int, name: str, error: OSError, text: str, what: str, last: bool) -> Exception:
    """The user's reading of a failed open of ``name`` in ``folder``: a refusal or the OS error."""
    with contextlib.suppress(OSError):
        found = os.stat(name, dir_fd=folder, follow_symlinks=False)
        if stat.S_ISLNK(found.st_mode):
            return _refused(text, what, "goes through a symbolic link, which is not followed")
        if not last and not stat.S_ISDIR(found.st_mode):
            return FileNotFoundError(errno.ENOTDIR, f"{what} {text!r}: {name!r} is not a folder", text)
    if error.errno in (errno.ELOOP, errno.ENOTDIR):  # the name changed under us: a link or a file now
        return _refused(text, what, "goes through a symbolic link, which is not followed")
    if error.errno == errno.ENOENT:
        return FileNotFoundError(errno.ENOENT, f"{what} {text!r} does not exist", text)
    return error


@contextlib.contextmanager
def _opened_folder(path: str) -> Iterator[int]:
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield descriptor
    finally:
        os.close(descriptor)


def _open_beneath(root_path: str, parts: tuple[str, ...], text: str, what: str) -> int:
    """A descriptor of ``parts`` opened under ``root_path`` one component at a time, never following a link."""
    if not parts:
        raise _refused(text, what, "is the root folder itself, not a file")
    with _opened_folder(root_path) as root, contextlib.ExitStack() as folders:
        folder = root
        for index, name in enumerate(parts):
            last = index == len(parts) - 1
            try:
                opened = os.open(name, _FILE_FLAGS if last else _FOLDER_FLAGS, dir_fd=folder)
            except OSError as error:
                raise _why_not_opened(folder, name, error, text, what, last) from None
            if last:
                return opened
            folders.callback(os.close, opened)
            folder = opened
    raise AssertionError("unreachable: the loop returns at the last component")


def _check_opened(descriptor: int, text: str, what: str) -> None:
    found = os.fstat(descriptor)
    if not stat.S_ISREG(found.st_mode):
        raise ValueError(f"{what} {text!r} is not a regular file")
    if found.st_nlink > 1 and not hard_links_allowed():
        raise _refused(
            text,
            what,
            f"has {found.st_nlink} hard links (another name may be outside the root; {HARD_LINKS_ENV}=allow)",
        )


def open_input_file(path: str | os.PathLike[str], what: str) -> BinaryIO:
    """``path`` opened for binary reading; under an input root, only a regular file reached inside it.

    ``OSError`` (``FileNotFoundError`` naming ``what``) when the file is missing or cannot be opened;
    ``ValueError`` when it may not be read: outside the root, through a symlink or ``..``, not a
    regular file, or hard-linked."""
    text = os.fspath(path)
    root = input_root()
    if root is None:
        return open(text, "rb")
    base, parts = _parts_inside(text, root, what)
    descriptor = _open_beneath(str(base), parts, text, what)
    try:
        _check_opened(descriptor, text, what)
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def check_input_path(path: str | os.PathLike[str], what: str) -> str:
    """``path`` itself when it may be read; ``ValueError`` naming ``what``, the path and the root otherwise.

    The early answer of :func:`open_input_file` for a clear message before any work: the path must
    be inside the root, without ``..`` and without a symbolic link on the way (checked by name,
    without opening). A path that does not exist yet passes; the open that follows says so."""
    text = os.fspath(path)
    root = input_root()
    if root is None:
        return text
    place, parts = _parts_inside(text, root, what)
    for name in parts:
        place = place / name
        try:
            found = os.lstat(place)
        except OSError:
            return text
        if stat.S_ISLNK(found.st_mode):
            raise _refused(text, what, "goes through a symbolic link, which is not followed")
    return text
