"""Load training examples from any supported source, sniffing the format from the content:

* DPR's biencoder files: a JSON array (``nq-train.json``) or JSON lines of records with
  ``question``, ``answers``, ``positive_ctxs``, ``negative_ctxs``, ``hard_negative_ctxs``;
* our JSONL (``nq/train.jsonl``: the same records without negatives);
* SQuAD JSON (``{"version", "data": [...]}``): each question with its paragraph as positive;
* ``hf:<hub id or path>``, a local parquet/arrow file or a folder: Hugging Face ``datasets``
  (the rule of :func:`dpr_components.utils.sources.resolve_source`).

Malformed records raise :class:`RecordError` naming the file, line (or index) and field.
Records without a positive passage are skipped and counted in the result.

Sizes are bounded before anything large is held: a JSON line at ``MAX_LINE_BYTES`` (8 MiB, as
corpus lines; a DPR record with 100 passages is about 100 KB), a file parsed as a whole (a JSON
array, SQuAD JSON) at ``MAX_JSON_FILE_BYTES`` (256 MiB, eight times SQuAD v1.1 train; JSON
lines are read one line at a time and have no file limit), and questions, passages and titles
at the limits of :mod:`records`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from dpr_components.dpr_data.examples import (
    LoadedExamples,
    TrainingExample,
    collect_examples,
)
from dpr_components.dpr_data.hf_source import load_hf_examples
from dpr_components.dpr_data.records import RecordError, example_from_record
from dpr_components.dpr_data.squad import examples_from_squad, looks_like_squad
from dpr_components.utils.input_files import input_root, open_input_file
from dpr_components.utils.line_files import MAX_LINE_BYTES, numbered_lines
from dpr_components.utils.record_ids import LineIds
from dpr_components.utils.sources import DATASETS_SUFFIXES, resolve_source

MAX_JSON_FILE_BYTES = 256 * 1024 * 1024


def load_training_examples(
    source: str | os.PathLike[str], split: str | None = None, limit: int | None = None
) -> LoadedExamples:
    """Read training examples from ``source`` (see the module docstring for the formats)."""
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    text = os.fspath(source)
    path = Path(text)
    if input_root() is not None and not (path.is_file() and path.suffix.lower() not in DATASETS_SUFFIXES):
        # `datasets` opens files by name, which cannot be checked once opened: a served pipeline reads JSON files only.
        raise ValueError(
            f"training data {text!r}: under an input root (a served pipeline) training data must be a JSON or JSON lines "
            "file inside it, not a folder, a parquet/arrow file or a datasets hub id"
        )
    resolved = resolve_source(text, "training data file")
    if resolved.with_datasets:
        return load_hf_examples(resolved.location, split, limit)
    return _load_json_file(path, limit)


def _first_char(path: Path) -> str:
    with open_input_file(path, "training data file") as handle:
        head = handle.read(4096).decode("utf-8-sig", errors="replace").lstrip()
    if not head:
        raise RecordError(f"{path}: the file is empty")
    return head[0]


def _load_json_file(path: Path, limit: int | None) -> LoadedExamples:
    first = _first_char(path)
    if first == "[":
        return _from_records(read_json_document(path), path, limit)
    if first != "{":
        raise RecordError(f"{path}, line 1: expected JSON (an array, an object per line, or SQuAD JSON)")
    first_line = _first_line(path)
    first_record = _json_or_none(first_line)
    if first_record is not None and not looks_like_squad(first_record):
        return _load_json_lines(path, limit)
    # One JSON document: SQuAD JSON on one line, pretty-printed, or a first line too long for a record.
    if first_record is not None:
        document = first_record
    else:
        document = read_json_document(path) if first_line is not None else _load_one_long_line(path)
    if looks_like_squad(document):
        return examples_from_squad(document, str(path), limit)
    raise RecordError(f"{path}: a JSON object that is not SQuAD JSON; expected JSON lines or an array")


def _json_or_none(line: str | None) -> object:
    """``line`` parsed, or None when there is none or it is not a JSON document on its own."""
    if line is None:
        return None
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        return None


def _first_line(path: Path) -> str | None:
    """The first line of ``path``, or None when it is longer than ``MAX_LINE_BYTES`` (no JSON line may
    be: a whole JSON document on one line, as SQuAD's files are)."""
    with open_input_file(path, "training data file") as handle:
        raw = handle.readline(MAX_LINE_BYTES + 1)
    return None if len(raw) > MAX_LINE_BYTES else raw.decode("utf-8-sig", errors="replace")


def _load_one_long_line(path: Path) -> object:
    """A file whose first line is longer than any JSON line may be: a whole JSON document."""
    try:
        return read_json_document(path)
    except RecordError as error:
        if isinstance(error.__cause__, json.JSONDecodeError) and error.__cause__.msg == "Extra data":
            # More documents follow: JSON lines, the first of them too long.
            raise RecordError(f"{path}:1: the line is longer than {MAX_LINE_BYTES:,} bytes") from None
        raise


def read_json_document(path: Path) -> object:
    """The JSON document in ``path``, parsed at once: files over ``MAX_JSON_FILE_BYTES`` are refused."""
    with open_input_file(path, "training data file") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_JSON_FILE_BYTES:
            raise RecordError(
                f"{path}: a JSON document of {size:,} bytes is read whole and may have at most {MAX_JSON_FILE_BYTES:,}; "
                "convert it to JSON lines (one record per line), which are read a line at a time"
            )
        raw = handle.read(MAX_JSON_FILE_BYTES + 1)  # the file may have grown since
    if len(raw) > MAX_JSON_FILE_BYTES:
        raise RecordError(f"{path}: the JSON document grew past {MAX_JSON_FILE_BYTES:,} bytes while it was read")
    try:
        return json.loads(raw.decode("utf-8-sig"))
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
    seen = LineIds(RecordError)
    for number, raw in numbered_lines(path, "training data file", MAX_LINE_BYTES, RecordError):
        where = f"{path}, line {number}"
        line = raw.removeprefix("\ufeff") if number == 1 else raw
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
        seen.add(example.id, number, where)
        examples.append(example)
        if limit is not None and len(examples) >= limit:
            break
    return _checked(LoadedExamples(examples, str(path), skipped))


def _checked(loaded: LoadedExamples) -> LoadedExamples:
    if not loaded.examples and not loaded.skipped_without_positive:
        raise RecordError(f"{loaded.source}: the file contains no records")
    return loaded
