"""Load evaluation questions with their gold answers from the formats DPR work uses.

Sources, chosen from ``source`` without needing a format flag:

* a local file, sniffed by content: JSON lines (``{"id", "question", "answers", ...}``; an
  ``"answer"`` field is accepted too, extra fields are ignored) or DPR's ``qa.csv`` / ``.tsv``
  layout (``question<TAB>["ans1", "ans2"]``, no header);
* a local ``.parquet`` / ``.arrow`` file or a folder, read with Hugging Face ``datasets``;
* ``hf:<path or hub id>`` to force ``datasets`` (e.g. a CSV with a header row);
* a Hugging Face hub id such as ``nq_open`` (needs network; ``split`` picks the split).

The source is told apart by :func:`dpr_components.utils.sources.resolve_source`, as for training data;
local files are read a line at a time by :func:`dpr_components.utils.line_files.numbered_lines`.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpr_components.utils.extras import DATASETS, DATASETS_READS, import_extra
from dpr_components.utils.line_files import numbered_lines
from dpr_components.utils.record_ids import LineIds
from dpr_components.utils.settings import hf_offline
from dpr_components.utils.sources import DATASETS_SUFFIXES, HF_PREFIX, resolve_source
from dpr_components.utils.validation import check_question_field

_OWN_SUFFIXES = {".jsonl", ".json", ".csv", ".tsv", ".txt"}


@dataclass
class QAExample:
    """One question and its accepted answers (strings, or regexes for CuratedTREC); ``gold_ids``: the
    ids of the documents holding its gold passage, when the question file names them (the selection
    splits do: a retrieved passage then counts by its ``document_id``, not by answer matching)."""

    id: str
    question: str
    answers: list[str]
    gold_ids: list[str] = dataclasses.field(default_factory=list)


def load_questions(
    source: str | os.PathLike[str], split: str | None = None, limit: int | None = None
) -> list[QAExample]:
    """Read questions from a local file, a local folder, or a Hugging Face dataset.

    ``split`` only applies to ``datasets`` sources (local files of our own formats have none).
    ``limit`` keeps the first ``limit`` questions."""
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    resolved = resolve_source(source, "question file", file_suffixes=_OWN_SUFFIXES | set(DATASETS_SUFFIXES))
    if resolved.with_datasets:
        return _load_with_datasets(resolved.location, split, limit)
    return _load_local_file(Path(resolved.location), limit)


# ---- local files: JSON lines or DPR's question<TAB>answers layout -------------------------


def _load_local_file(path: Path, limit: int | None) -> list[QAExample]:
    examples: list[QAExample] = []
    seen_ids = LineIds()
    json_lines: bool | None = None
    for number, raw in numbered_lines(path, "question file"):
        line = (raw.removeprefix("\ufeff") if number == 1 else raw).rstrip("\r\n")
        if not line.strip():
            continue
        if json_lines is None:
            json_lines = line.lstrip().startswith("{")
        where = f"{path}, line {number}"
        example = _parse_json_line(line, where, number) if json_lines else _parse_tsv_line(line, where, number)
        seen_ids.add(example.id, number, where)
        examples.append(example)
        if limit is not None and len(examples) >= limit:
            break
    if not examples:
        raise ValueError(f"{path}: the file contains no questions (it is empty or blank)")
    return examples


def _parse_json_line(line: str, where: str, number: int) -> QAExample:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where}: bad JSON: {error.msg} (column {error.colno})") from error
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(record).__name__}")
    if "question" not in record and "data" in record and "version" in record:
        raise ValueError(
            f"{where}: this looks like SQuAD's nested JSON; convert it to one question per line "
            '({"question", "answers"}) first'
        )
    return _example_from_record(record, where, default_id=str(number), strict=True)


def _parse_tsv_line(line: str, where: str, number: int) -> QAExample:
    if "\t" not in line:
        raise ValueError(
            f"{where}: expected DPR's 'question<TAB>[answers]' layout but found no tab; "
            f"for a CSV with a header row use the '{HF_PREFIX}' prefix"
        )
    question, answers_text = line.split("\t", 1)
    answers = _parse_answer_literal(answers_text, where)
    return QAExample(
        id=str(number), question=check_question_field(question, where), answers=_check_answers(answers, where)
    )


def _parse_answer_literal(text: str, where: str) -> Any:
    """DPR writes answer lists as Python reprs (single quotes), so fall back from JSON to a literal."""
    text = text.strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as error:
        raise ValueError(f"{where}: field 'answers': not a JSON or Python list literal: {text[:80]!r}") from error


# ---- shared field checks ------------------------------------------------------------------


def _check_answers(value: Any, where: str, field: str = "answers") -> list[str]:
    if not isinstance(value, list) or not value:
        raise ValueError(f"{where}: field '{field}': expected a non-empty list of strings, got {value!r:.80}")
    for index, answer in enumerate(value):
        if not isinstance(answer, str):
            raise ValueError(f"{where}: field '{field}[{index}]': expected a string, got {type(answer).__name__}")
        # An empty answer would match nothing as a token run but everything as a regex.
        if not answer.strip():
            raise ValueError(f"{where}: field '{field}[{index}]' is an empty string")
    return list(value)


def _example_from_record(record: Mapping[str, Any], where: str, default_id: str, strict: bool) -> QAExample:
    """Build an example from a mapping; ``strict=False`` also accepts dataset-style answer cells."""
    if "question" not in record:
        raise ValueError(f"{where}: missing field 'question'")
    question = check_question_field(record["question"], where)
    name = "answers" if "answers" in record else "answer" if "answer" in record else None
    if name is None:
        raise ValueError(f"{where}: missing field 'answers'")
    answers = record[name]
    if not strict:
        answers = _coerce_dataset_answers(answers, where)
    raw_id = record.get("id")
    if raw_id is None or raw_id == "":
        example_id = default_id
    elif isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool):
        example_id = str(raw_id)
    else:
        raise ValueError(f"{where}: field 'id': expected a string or integer, got {type(raw_id).__name__}")
    gold_ids = _check_gold_ids(record.get("gold_ids", []), where)
    return QAExample(example_id, question, _check_answers(answers, where, name), gold_ids)


def _check_gold_ids(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{where}: field 'gold_ids': expected a list of document ids (strings), got {value!r:.80}")
    return list(value)


def _coerce_dataset_answers(value: Any, where: str) -> Any:
    """SQuAD-style ``{"text": [...]}`` cells, list literals in CSV cells, or one bare answer."""
    if isinstance(value, Mapping) and "text" in value:
        return list(value["text"]) if isinstance(value["text"], (list, tuple)) else value["text"]
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, str):
        return _parse_answer_literal(value, where) if value.lstrip().startswith("[") else [value]
    return value


# ---- Hugging Face datasets ----------------------------------------------------------------


def _load_with_datasets(source: str, split: str | None, limit: int | None) -> list[QAExample]:
    # deferred: importing datasets is slow and only needed here (an extra of the package)
    datasets = import_extra(DATASETS, f"question file {source!r}: reading {DATASETS_READS}")
    path = Path(source)
    local = path.exists()
    try:
        if local and path.is_file():
            suffix = path.suffix.lower()
            builder = DATASETS_SUFFIXES.get(suffix) or ("csv" if suffix in {".csv", ".tsv"} else "json")
            options = {"delimiter": "\t"} if suffix == ".tsv" else {}
            loaded = datasets.load_dataset(builder, data_files=str(path), **options)
        else:
            loaded = datasets.load_dataset(source)
    except ConnectionError as error:
        if local:
            raise
        reason = (
            "offline mode is on (HF_DATASETS_OFFLINE / HF_HUB_OFFLINE) and it is not in the local cache"
            if hf_offline()
            else "the Hugging Face Hub could not be reached"
        )
        raise ConnectionError(
            f"cannot load Hugging Face dataset {source!r}: {reason}, and no local file or folder of that "
            "name exists. Download it where you have network and pass a local file instead, e.g. a JSON "
            'lines file with {"question", "answers"} per line, or DPR\'s question<TAB>[answers] .tsv.'
        ) from error
    except FileNotFoundError:
        raise
    except Exception as error:  # datasets wraps parse failures in its own exception types
        cause = f" ({error.__cause__})" if error.__cause__ is not None else ""
        raise ValueError(f"{source}: could not be read with Hugging Face datasets: {error}{cause}") from error
    split_name = _pick_split(loaded, source, split)
    dataset = loaded[split_name]
    if limit is not None:
        dataset = dataset.select(range(min(limit, len(dataset))))
    examples = [
        _example_from_record(row, f"{source}, split {split_name!r}, row {index}", default_id=str(index), strict=False)
        for index, row in enumerate(dataset)
    ]
    if not examples:
        raise ValueError(f"{source}: the dataset split contains no questions")
    return examples


def _pick_split(loaded: Any, source: str, split: str | None) -> str:
    names = list(loaded.keys())
    if split is None:
        if len(names) == 1:
            return names[0]
        raise ValueError(f"{source}: has splits {names}; pass split= to choose one (nq_open's dev set is 'validation')")
    if split not in names:
        raise ValueError(f"{source}: no split {split!r}; available splits are {names}")
    return split
