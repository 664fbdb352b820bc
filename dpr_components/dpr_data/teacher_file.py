"""Teacher files: per training question, a first stage's candidates with a teacher's score for each.

One JSON line per question (``training/retriever/teacher_scores.py`` writes them, distillation reads them)::

    {"id", "question", "answers", "source", "gold_ids",
     "passage_ids", "retrieval", "dense", "teacher", "has_answer", "gold"}

``passage_ids`` are store ids in the first stage's order; ``retrieval`` its scores, ``dense`` the
dense similarity it used, ``teacher`` the teacher's logits, ``has_answer`` whether the passage holds
an answer string and ``gold`` whether it was cut from one of ``gold_ids`` (the question's gold
paragraph in the pool). The file is appended to as questions are scored; a line cut short by a kill is
dropped when the file is opened again, so a run resumes from the questions already written."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dpr_components.utils.json_files import complete_lines
from dpr_components.utils.line_files import numbered_lines

PER_PASSAGE = ("retrieval", "dense", "teacher", "has_answer", "gold")


@dataclass
class TeacherRecord:
    """One question's candidates and their scores (every per-passage list as long as ``passage_ids``)."""

    id: str
    question: str
    answers: list[str]
    source: str
    passage_ids: list[str]
    retrieval: list[float]
    dense: list[float]
    teacher: list[float]
    has_answer: list[bool]
    gold: list[bool]
    gold_ids: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        """The record as one JSON line (without the newline)."""
        return json.dumps(asdict(self), ensure_ascii=False)


def _checked_list(value: Any, name: str, length: int, kind: type, where: str) -> list[Any]:
    if not isinstance(value, list) or len(value) != length:
        raise ValueError(f"{where}: field {name!r}: expected a list of {length} values")
    if kind is float:
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value):
            raise ValueError(f"{where}: field {name!r}: expected finite numbers")
        return [float(v) for v in value]
    if not all(isinstance(v, kind) for v in value):
        raise ValueError(f"{where}: field {name!r}: expected {kind.__name__} values")
    return list(value)


def record_from_json(data: Any, where: str) -> TeacherRecord:
    """A :class:`TeacherRecord` from one parsed line; ``where`` (file, line) names it in errors."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object")
    for name in ("id", "question", "source"):
        if not isinstance(data.get(name), str):
            raise ValueError(f"{where}: field {name!r}: expected a string")
    ids = data.get("passage_ids")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ValueError(f"{where}: field 'passage_ids': expected a list of strings")
    kinds = {"retrieval": float, "dense": float, "teacher": float, "has_answer": bool, "gold": bool}
    lists = {name: _checked_list(data.get(name), name, len(ids), kinds[name], where) for name in PER_PASSAGE}
    answers = data.get("answers", [])
    gold_ids = data.get("gold_ids", [])
    for name, value in (("answers", answers), ("gold_ids", gold_ids)):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{where}: field {name!r}: expected a list of strings")
    return TeacherRecord(
        id=data["id"],
        question=data["question"],
        answers=answers,
        source=data["source"],
        passage_ids=ids,
        gold_ids=gold_ids,
        **lists,
    )


def read_teacher_file(path: str | Path, limit: int | None = None) -> list[TeacherRecord]:
    """The records of a teacher file (a last line cut short by a kill is skipped), at most ``limit``."""
    records: list[TeacherRecord] = []
    for number, line in numbered_lines(path, "teacher file"):
        if limit is not None and len(records) >= limit:
            break
        if not line.strip():
            continue
        if not line.endswith("\n"):
            break  # cut short while being written: the scoring run writes it again when resumed
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{number}: not JSON ({error.msg})") from None
        records.append(record_from_json(data, f"{path}:{number}"))
    return records


def resume_ids(path: Path) -> set[str]:
    """Ids already written to ``path``; a last line cut short by a kill is removed from the file first."""
    if not path.exists() or not complete_lines(path):
        return set()
    return {record.id for record in read_teacher_file(path)}


class TeacherWriter:
    """Appends records to a teacher file, each batch flushed and synced to disk."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open across batches, closed by close()

    def write(self, records: Iterable[TeacherRecord]) -> None:
        """Append ``records`` and make them durable."""
        self._handle.write("".join(r.to_json() + "\n" for r in records))
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        """Close the file."""
        self._handle.close()

    def __enter__(self) -> TeacherWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_batches(items: list[Any], size: int) -> Iterator[list[Any]]:
    """``items`` in consecutive slices of ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
