"""Load training examples from any supported source, sniffing the format from the content:

* DPR's biencoder files: a JSON array (``nq-train.json``) or JSON lines of records with
  ``question``, ``answers``, ``positive_ctxs``, ``negative_ctxs``, ``hard_negative_ctxs``;
* our JSONL (``nq/train.jsonl``: the same records without negatives);
* SQuAD JSON (``{"version", "data": [...]}``): each question with its paragraph as positive;
* ``hf:<hub id or path>``, a local parquet/arrow file or a folder: Hugging Face ``datasets``.

Malformed records raise :class:`RecordError` naming the file, line (or index) and field.
Records without a positive passage are skipped and counted in the result."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from dpr_components.training.examples import LoadedExamples, TrainingExample, collect_examples
from dpr_components.training.hf_source import load_hf_examples
from dpr_components.training.records import RecordError, example_from_record
from dpr_components.training.squad import examples_from_squad, looks_like_squad

HF_PREFIX = "hf:"
_DATASETS_SUFFIXES = {".parquet", ".arrow"}
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def load_training_examples(
    source: str | os.PathLike[str], split: str | None = None, limit: int | None = None
) -> LoadedExamples:
    """Read training examples from ``source`` (see the module docstring for the formats)."""
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    text = os.fspath(source)
    if text.startswith(HF_PREFIX):
        return load_hf_examples(text[len(HF_PREFIX) :], split, limit)
    path = Path(text)
    if path.is_dir() or (path.is_file() and path.suffix.lower() in _DATASETS_SUFFIXES):
        return load_hf_examples(text, split, limit)
    if path.is_file():
        return _load_json_file(path, limit)
    if path.suffix or not _HUB_ID.match(text):
        raise FileNotFoundError(f"training data file {text!r} does not exist")
    return load_hf_examples(text, split, limit)


def _first_char(path: Path) -> str:
    with open(path, "rb") as handle:
        head = handle.read(4096).decode("utf-8-sig", errors="replace").lstrip()
    if not head:
        raise RecordError(f"{path}: the file is empty")
    return head[0]


def _load_json_file(path: Path, limit: int | None) -> LoadedExamples:
    first = _first_char(path)
    if first == "[":
        return _from_records(_load_whole(path), path, limit)
    if first != "{":
        raise RecordError(f"{path}, line 1: expected JSON (an array, an object per line, or SQuAD JSON)")
    with open(path, encoding="utf-8-sig") as handle:
        first_line = handle.readline()
    try:
        first_record = json.loads(first_line)
    except json.JSONDecodeError:
        first_record = None  # a pretty-printed JSON document spanning several lines
    if first_record is None or looks_like_squad(first_record):
        document = _load_whole(path) if first_record is None else first_record
        if looks_like_squad(document):
            return examples_from_squad(document, str(path), limit)
        raise RecordError(f"{path}: a JSON object that is not SQuAD JSON; expected JSON lines or an array")
    return _load_json_lines(path, limit)


def _load_whole(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as error:
        raise RecordError(f"{path}, line {error.lineno}: bad JSON: {error.msg} (column {error.colno})") from error
    except UnicodeDecodeError as error:
        raise RecordError(f"{path}: not valid UTF-8 (byte {error.start})") from error


def _from_records(records: object, path: Path, limit: int | None) -> LoadedExamples:
    if not isinstance(records, list):
        raise RecordError(f"{path}: expected a JSON array of records")
    parsed = (example_from_record(r, f"{path}, record {i}", f"record-{i}") for i, r in enumerate(records))
    examples, skipped = collect_examples(parsed, limit)
    return _checked(LoadedExamples(examples, str(path), skipped))


def _load_json_lines(path: Path, limit: int | None) -> LoadedExamples:
    examples: list[TrainingExample] = []
    skipped = 0
    seen: dict[str, int] = {}
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}, line {number}"
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as error:
                raise RecordError(f"{where}: not valid UTF-8 (byte {error.start})") from error
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise RecordError(f"{where}: bad JSON: {error.msg} (column {error.colno})") from error
            example = example_from_record(record, where, f"line-{number}")
            if example is None:
                skipped += 1
                continue
            if example.id in seen:
                raise RecordError(f"{where}: field 'id': {example.id!r} already used on line {seen[example.id]}")
            seen[example.id] = number
            examples.append(example)
            if limit is not None and len(examples) >= limit:
                break
    return _checked(LoadedExamples(examples, str(path), skipped))


def _checked(loaded: LoadedExamples) -> LoadedExamples:
    if not loaded.examples and not loaded.skipped_without_positive:
        raise RecordError(f"{loaded.source}: the file contains no records")
    return loaded


def resolve_data_source(source: str | os.PathLike[str]) -> str:
    """``source`` itself if it exists (or is ``hf:``/a hub id), else the same relative path inside
    the shared data folder (:func:`dpr_components.settings.data_dir`) when it exists there."""
    from dpr_components.settings import data_dir

    text = os.fspath(source)
    if text.startswith(HF_PREFIX) or Path(text).exists() or Path(text).is_absolute():
        return text
    candidate = data_dir() / text
    return str(candidate) if candidate.exists() else text
