"""Documents given as data (``[{"id", "title", "text"}, ...]``) instead of a corpus file, checked like corpus lines.

Each problem names the item as ``records[i]``: a record that is not an object, a missing or
non-string field, an id the record id rule refuses (``record_ids``: empty, too long, a control
character, the form of a passage id), a duplicate id, a text without visible words, a "word" longer than
the corpus limit, a record larger than a corpus line may be (``MAX_LINE_BYTES`` of UTF-8: a
served index request cannot keep the encoder busy for half an hour with one document). An
empty list is an error too, as an empty corpus file is."""

from __future__ import annotations

from typing import Any, Literal

from dpr_components.corpus.files import CorpusError, CorpusRecord, text_problem
from dpr_components.corpus.record_ids import record_id_problem
from dpr_components.utils.line_files import MAX_LINE_BYTES

RECORDS = "records"


def _field(record: dict[str, Any], name: str, index: int, required: bool) -> str:
    value = record.get(name)
    if value is None:
        if required:
            raise CorpusError(f"{RECORDS}[{index}]: missing field {name!r}")
        return ""
    if name == "id" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise CorpusError(f"{RECORDS}[{index}]: field {name!r} must be a string, got {type(value).__name__}")
    return value


def read_records(records: Any, on_empty: Literal["error", "skip"] = "error") -> list[CorpusRecord]:
    """The documents in ``records`` (``line`` holds each one's list index), checked as a corpus file is."""
    if not isinstance(records, list):
        raise CorpusError(
            f"{RECORDS} must be a list of {{'id', 'title', 'text'}} objects, got {type(records).__name__}"
        )
    if not records:
        raise CorpusError(f"{RECORDS} is empty: give at least one document")
    seen: dict[str, int] = {}
    kept = []
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise CorpusError(
                f"{RECORDS}[{index}]: expected an object with id, title, text, got {type(record).__name__}"
            )
        unknown = sorted(set(record) - {"id", "title", "text"})
        if unknown:
            raise CorpusError(f"{RECORDS}[{index}]: unknown fields {unknown}; a record has id, title and text")
        item = CorpusRecord(
            id=_field(record, "id", index, True),
            title=_field(record, "title", index, False),
            text=_field(record, "text", index, True),
            line=index,
        )
        id_problem = record_id_problem(item.id)
        if id_problem:
            raise CorpusError(f"{RECORDS}[{index}]: field 'id' {id_problem}")
        if item.id in seen:
            raise CorpusError(f"{RECORDS}[{index}]: id {item.id!r} already used by {RECORDS}[{seen[item.id]}]")
        seen[item.id] = index
        if not item.text.strip():
            if on_empty == "skip":
                continue
            raise CorpusError(f"{RECORDS}[{index}]: document {item.id!r} has no text (field 'text' is empty)")
        problem = text_problem(item)
        if problem:
            raise CorpusError(f"{RECORDS}[{index}]: document {item.id!r} has {problem}")
        size = sum(len(value.encode("utf-8")) for value in (item.id, item.title, item.text))
        if size > MAX_LINE_BYTES:
            raise CorpusError(
                f"{RECORDS}[{index}]: document {item.id!r} has {size:,} bytes of text; the limit is {MAX_LINE_BYTES:,} "
                "(as for a corpus line): split it into several documents"
            )
        kept.append(item)
    if not kept:
        raise CorpusError(f"{RECORDS}: none of the {len(records)} documents has text (all were skipped as empty)")
    return kept
