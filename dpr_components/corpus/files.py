"""Read corpora: our JSONL (``id``, ``title``, ``text``) and DPR's ``psgs_w100.tsv`` (``id``, ``text``, ``title``).

Every problem is reported with file and line: bad JSON, a missing or empty field, bytes that
are not UTF-8, an id the record id rule refuses (``record_ids``), a duplicate id, a line longer than ``MAX_LINE_BYTES`` (refused before it is
read into memory), a "word" of more than ``MAX_WORD_CHARS`` characters without a space. Such
a word is refused rather than cut: it is not text (base64, a minified blob, a broken export),
and indexing pieces of it would only fill the index with noise. A file without any document
is an error too: indexing nothing and reporting success hides a wrong path or an empty export."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from dpr_components.corpus.record_ids import record_id_problem
from dpr_components.utils.line_files import MAX_LINE_BYTES, lines_of, numbered_lines
from dpr_components.utils.validation import (
    describe_lone_surrogate,
    describe_long_word,
    find_long_word,
    strict_json_loads,
)

CorpusFormat = Literal["auto", "jsonl", "tsv"]


class CorpusError(ValueError):
    """A corpus file is missing or malformed; the message names file and line."""


@dataclass(frozen=True)
class CorpusRecord:
    id: str
    title: str
    text: str
    line: int


def text_problem(record: CorpusRecord) -> str | None:
    """What makes a record's text unfit to index (a word without spaces past the limit, a lone
    surrogate in any field), as the end of a sentence starting "document ID has ...", or ``None``."""
    long_word = find_long_word(record.text)
    if long_word is not None:
        return describe_long_word(long_word)
    for name in ("id", "title", "text"):
        surrogate = describe_lone_surrogate(getattr(record, name))
        if surrogate:
            return f"in field {name!r} {surrogate}"
    return None


def detect_format(path: Path) -> Literal["jsonl", "tsv"]:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return "jsonl"
    if suffix in (".tsv", ".csv"):
        return "tsv"
    raise CorpusError(f"{path}: cannot tell the corpus format from the extension; use .jsonl or .tsv")


Lines = Iterator[tuple[int, str]]


def _lines(path: Path) -> Lines:
    return numbered_lines(path, "corpus file", MAX_LINE_BYTES, CorpusError)


def _field(record: dict, name: str, path: str | Path, line: int, required: bool = True) -> str:
    value = record.get(name)
    if value is None:
        if required:
            raise CorpusError(f"{path}:{line}: missing field {name!r}")
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and name == "id":
        return str(value)
    if not isinstance(value, str):
        raise CorpusError(f"{path}:{line}: field {name!r} must be a string, got {type(value).__name__}")
    return value


def _read_jsonl(path: str | Path, lines: Lines) -> Iterator[CorpusRecord]:
    for line, text in lines:
        if not text.strip():
            continue
        try:
            record = strict_json_loads(text)
        except json.JSONDecodeError as error:
            raise CorpusError(f"{path}:{line}: invalid JSON ({error.msg} at column {error.colno})") from None
        except ValueError as error:  # NaN or Infinity
            raise CorpusError(f"{path}:{line}: {error}") from None
        if not isinstance(record, dict):
            raise CorpusError(f"{path}:{line}: expected a JSON object, got {type(record).__name__}")
        yield CorpusRecord(
            id=_field(record, "id", path, line),
            title=_field(record, "title", path, line, required=False),
            text=_field(record, "text", path, line),
            line=line,
        )


def _read_tsv(path: str | Path, lines: Lines) -> Iterator[CorpusRecord]:
    csv.field_size_limit(sys.maxsize)
    header_line = next(lines, None)
    if header_line is None:
        raise CorpusError(f"{path}: the file is empty")
    header = header_line[1].rstrip("\r\n").split("\t")
    missing = [name for name in ("id", "text", "title") if name not in header]
    if missing:
        raise CorpusError(
            f"{path}:1: header must name the columns id, text, title (DPR's psgs_w100.tsv); missing {missing}"
        )
    columns = {name: header.index(name) for name in ("id", "text", "title")}
    for line, text in lines:
        if not text.strip():
            continue
        row = next(csv.reader([text.rstrip("\r\n")], delimiter="\t"))
        if len(row) != len(header):
            raise CorpusError(f"{path}:{line}: expected {len(header)} tab-separated fields, got {len(row)}")
        yield CorpusRecord(id=row[columns["id"]], title=row[columns["title"]], text=row[columns["text"]], line=line)


def read_corpus(
    path: str | Path, fmt: CorpusFormat = "auto", on_empty: Literal["error", "skip"] = "error"
) -> Iterator[CorpusRecord]:
    """Yield the records of a corpus file, checking ids and texts as it goes."""
    path = Path(path)
    if path.is_dir():
        raise CorpusError(f"corpus file {path} is a directory, not a file")
    yield from _checked_records(path, fmt, _lines(path), on_empty)


def read_corpus_bytes(
    data: bytes, name: str, fmt: CorpusFormat = "auto", on_empty: Literal["error", "skip"] = "error"
) -> Iterator[CorpusRecord]:
    """Yield the records of a corpus file's bytes (a file of a folder being indexed), checked as
    :func:`read_corpus` checks them; ``name`` (the file's path in its folder) starts every error."""
    yield from _checked_records(name, fmt, lines_of(io.BytesIO(data), name, MAX_LINE_BYTES, CorpusError), on_empty)


def _checked_records(
    path: str | Path, fmt: CorpusFormat, lines: Lines, on_empty: Literal["error", "skip"]
) -> Iterator[CorpusRecord]:
    """The records of ``lines`` in format ``fmt``, with ids and texts checked (see the module docstring)."""
    reader = _read_jsonl if (fmt if fmt != "auto" else detect_format(Path(path))) == "jsonl" else _read_tsv
    seen: dict[str, int] = {}
    skipped = 0
    for record in reader(path, lines):
        id_problem = record_id_problem(record.id)
        if id_problem:
            raise CorpusError(f"{path}:{record.line}: field 'id' {id_problem}")
        if record.id in seen:
            raise CorpusError(f"{path}:{record.line}: id {record.id!r} already used on line {seen[record.id]}")
        seen[record.id] = record.line
        if not record.text.strip():
            if on_empty == "skip":
                skipped += 1
                continue
            raise CorpusError(f"{path}:{record.line}: document {record.id!r} has no text (field 'text' is empty)")
        problem = text_problem(record)
        if problem:
            raise CorpusError(f"{path}:{record.line}: document {record.id!r} has {problem}")
        yield record
    if not seen:
        raise CorpusError(f"{path}: the corpus holds no documents (the file is empty or has only blank lines)")
    if skipped == len(seen):
        raise CorpusError(f"{path}: none of the {skipped} documents has text (all were skipped as empty)")
