"""One rule for every folder a command writes: what an existing folder holds decides whether it may be written.

Commands that *replace* a folder (exports, reader and model saves) replace it only when it is
empty or carries their own marker file (:data:`MARKER`, written into the temporary folder before
it is renamed into place); commands that *update* a folder in place (stores, training runs,
shard folders, caches, reports) also accept a folder recognised by its files as one of theirs,
written before markers existed. Everything else (a file, a store, a run, a model of another kind,
unknown files) is refused with one line, and ``--overwrite`` insists. Never overridable: a path
that is a file, the working folder or one of its ancestors (for a replacement), and the
command's own inputs (the output equal to, inside, or containing one)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from dpr_components.utils.atomic_files import atomic_write_text

MARKER = ".dpr-components-output.json"

# What a folder can hold (the names appear in error messages: "OUT holds a document store").
STORE = "document store"
DPR_RUN = "DPR training run"
READER_RUN = "reader training run"
SHARDS = "shard folder"
ENCODER_PAIR = "encoder pair"
SENTENCE_TRANSFORMERS = "sentence-transformers model"
QA_MODEL = "question-answering model"
READER = "reader"
MODEL = "model"
REPORT = "report"
EMBEDDING_CACHE = "embedding cache"
EMPTY = "empty folder"
OTHER = "other files"

_SHARD_NAME = re.compile(r"^shard-\d+-of-\d+$")
# What an atomic write or a lock leaves for a moment beside the files (``.NAME.RANDOM.tmp``, ``.NAME.old``,
# ``.NAME.merge.lock``): another process of the same command (a DDP rank, a shard worker) may see them.
_TRANSIENT_NAME = re.compile(r"^\..+\.(tmp|old|lock|merging)$")
_CACHE_NAME = re.compile(r"^[^.].*\.sqlite(-wal|-shm)?(\.damaged(-wal|-shm)?)?$")
_STORE_NAMES = {"documents.sqlite", "documents.sqlite-wal", "documents.sqlite-shm", "dense_index", "dense_delta"}
_STORE_NAMES |= {"bm25_index", "store.lock"}


class OutputFolderError(ValueError):
    """An output path may not be written (the message names it and says what it holds)."""


def _version() -> str:
    try:
        return metadata.version("dpr-components")
    except metadata.PackageNotFoundError:
        return "unknown"


def write_marker(folder: str | os.PathLike[str], kind: str) -> None:
    """Mark ``folder`` (typically the temporary folder of an atomic write) as written by a command of ``kind``."""
    record = {"kind": kind, "written_by": "dpr-components", "version": _version()}
    atomic_write_text(Path(folder) / MARKER, json.dumps(record) + "\n")


def read_marker(folder: str | os.PathLike[str]) -> str | None:
    """The kind recorded by ``folder``'s marker, ``None`` without a readable one."""
    try:
        record = json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    kind = record.get("kind") if isinstance(record, dict) else None
    return kind if isinstance(kind, str) else None


def _model_kind(folder: Path) -> str:
    """What a folder with a ``config.json`` holds: a reader, a QA model, a run's settings or another model."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        config = {}
    if isinstance(config, dict) and "config" in config and "data" in config:
        return DPR_RUN  # the settings file of a DPR run
    architectures = config.get("architectures") or [] if isinstance(config, dict) else []
    if any(str(name) == "DPRReader" for name in architectures):
        return READER
    if any(str(name).endswith("ForQuestionAnswering") for name in architectures):
        return QA_MODEL
    return MODEL


def _content_kind(folder: Path, names: set[str]) -> str:
    """What the files of a folder without a marker say it holds."""
    visible = {name for name in names if not name.startswith(".")}
    if "documents.sqlite" in names or (visible and visible <= _STORE_NAMES):
        return STORE
    if "checkpoint" in names or ("log.jsonl" in names and "export" in names):
        return READER_RUN
    if "checkpoints" in names or "log.jsonl" in names:
        return DPR_RUN
    if "question_encoder" in names or ("encoder_pair.json" in names and "config.json" not in names):
        return ENCODER_PAIR
    if "modules.json" in names:
        return SENTENCE_TRANSFORMERS
    if "reader_info.json" in names:
        return READER
    if "config.json" in names:
        return _model_kind(folder)
    if "manifest.json" in names and "passages.jsonl" in names:
        return SHARDS  # a single shard
    if visible and all(_SHARD_NAME.match(name) for name in visible):
        return SHARDS
    if visible and all(_CACHE_NAME.match(name) for name in visible):
        return EMBEDDING_CACHE
    if "report.json" in names or "report.md" in names:
        return REPORT
    return OTHER


def folder_kind(path: str | os.PathLike[str]) -> str | None:
    """What the existing folder ``path`` holds (one of this module's kinds); ``None`` when nothing is there."""
    folder = Path(path)
    if not folder.exists():
        return None
    names = {entry.name for entry in folder.iterdir() if not _TRANSIENT_NAME.match(entry.name)}
    if not names:
        return EMPTY
    return read_marker(folder) or _content_kind(folder, names)


def _article(kind: str) -> str:
    if kind == OTHER:
        return "files this command did not write"
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def _check_place(path: Path, target: Path, replace: bool, inputs: Iterable[str | os.PathLike[str]]) -> None:
    """The refusals ``--overwrite`` cannot lift: a file, the working folder, the command's inputs."""
    if path.exists() and not path.is_dir():
        raise OutputFolderError(f"{path} is a file, not a folder; give a folder to write")
    here = Path.cwd().resolve()
    if replace and (target == here or target in here.parents):
        raise OutputFolderError(f"{path} is the working folder or contains it; give a new folder to write")
    for item in inputs:
        source = Path(item).resolve()
        if target == source or target in source.parents:
            raise OutputFolderError(f"{path} holds this command's input {item}; write to another folder")
        if source in target.parents:
            raise OutputFolderError(f"{path} is inside this command's input {item}; write to another folder")


def check_output_folder(
    path: str | os.PathLike[str],
    kind: str,
    *,
    inputs: Iterable[str | os.PathLike[str]] = (),
    overwrite: bool = False,
    replace: bool = True,
    hint: str = "choose another folder or pass --overwrite",
) -> Path:
    """Check that a command writing ``kind`` may write the folder ``path``; returns it.

    ``replace``: the command replaces the whole folder (else it updates it in place, and a folder
    whose files show it holds ``kind`` is accepted too). ``inputs``: paths the command reads.
    Raises :class:`OutputFolderError` with one line naming the problem; ``hint`` ends that line
    for refusals ``overwrite`` would lift."""
    folder = Path(path)
    _check_place(folder, folder.resolve(), replace, [item for item in inputs if str(item) and Path(item).exists()])
    if not folder.exists() or overwrite:
        return folder
    marked = read_marker(folder)
    found = folder_kind(folder)
    if found == EMPTY or marked == kind or (not replace and found == kind):
        return folder
    if found == kind:
        raise OutputFolderError(f"{folder} holds {_article(kind)} that this command did not write; {hint}")
    raise OutputFolderError(f"{folder} holds {_article(found or OTHER)}; {hint}")


def claim_folder(path: str | os.PathLike[str], kind: str, hint: str = "choose another folder") -> Path:
    """For a command that updates the folder ``path`` in place (a training run): check it as
    :func:`check_output_folder` does, create it and mark it as holding ``kind``; returns it."""
    folder = check_output_folder(path, kind, replace=False, hint=hint)
    folder.mkdir(parents=True, exist_ok=True)
    if read_marker(folder) != kind:
        write_marker(folder, kind)
    return folder


def check_report_folder(path: str | os.PathLike[str], option: str = "--out") -> Path:
    """For a command that adds report files to the folder ``path``: refuse a file, and a folder
    holding a store, a run, shards, a model or a cache (unknown files are kept beside the report)."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise OutputFolderError(f"{option} {folder} is a file; give a folder for the report")
    found = folder_kind(folder) if folder.is_dir() else None
    if found not in (None, EMPTY, REPORT, OTHER):
        raise OutputFolderError(f"{option} {folder} holds {_article(found)}; give a folder for the report")
    return folder
