"""Where a data source named by a string is read from: a local file, or Hugging Face ``datasets``.

Questions and training data name their source the same way, without a format flag:

* ``hf:<path or hub id>`` forces ``datasets``;
* a local folder, or a local ``.parquet`` / ``.arrow`` file, is read with ``datasets``;
* any other existing file is a local file the caller parses itself;
* a name that is no existing path but a Hugging Face hub id (``nq_open``, ``org/name``) goes to
  ``datasets`` (network); a name that looks like a file and does not exist is an error.

Recipes also look a relative name up in the shared data folder (:func:`resolve_data_source`)."""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from dpr_components.utils.settings import data_dir

HF_PREFIX = "hf:"
DATASETS_SUFFIXES = {".parquet": "parquet", ".arrow": "arrow"}
"""Local file suffixes that only ``datasets`` reads, with the ``datasets`` builder for each."""
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


@dataclass(frozen=True)
class ResolvedSource:
    """What to open and how: ``location`` is a path or hub id (any ``hf:`` prefix removed)."""

    location: str
    with_datasets: bool


def resolve_source(
    source: str | os.PathLike[str], what: str, file_suffixes: Collection[str] | None = None
) -> ResolvedSource:
    """How to read ``source`` (see the module docstring); ``FileNotFoundError`` naming ``what`` when it
    names a missing file.

    A missing name "names a file" when its suffix is in ``file_suffixes`` (lower case, with the dot),
    or, when ``file_suffixes`` is None, when it has any suffix; a name that is no hub id names a file too."""
    text = os.fspath(source)
    if text.startswith(HF_PREFIX):
        return ResolvedSource(text[len(HF_PREFIX) :], with_datasets=True)
    path = Path(text)
    if path.is_dir() or (path.is_file() and path.suffix.lower() in DATASETS_SUFFIXES):
        return ResolvedSource(text, with_datasets=True)
    if path.is_file():
        return ResolvedSource(text, with_datasets=False)
    names_a_file = bool(path.suffix) if file_suffixes is None else path.suffix.lower() in file_suffixes
    if names_a_file or not HUB_ID.match(text):
        raise FileNotFoundError(f"{what} {text!r} does not exist")
    return ResolvedSource(text, with_datasets=True)


def resolve_data_source(source: str | os.PathLike[str]) -> str:
    """``source`` itself if it exists (or is ``hf:``/a hub id), else the same relative path inside
    the shared data folder (:func:`dpr_components.utils.settings.data_dir`) when it exists there."""
    text = os.fspath(source)
    if text.startswith(HF_PREFIX) or Path(text).exists() or Path(text).is_absolute():
        return text
    candidate = data_dir() / text
    return str(candidate) if candidate.exists() else text
