"""Training data: a line, question, passage or title beyond its limit, or a whole-file JSON
document too large to parse at once, is refused before training with one line naming the file,
the line (or record) and the field, instead of training on it at a cost of gigabytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpr_components.dpr_data.records import (
    MAX_TRAINING_PASSAGE_CHARS,
    MAX_TRAINING_QUESTION_CHARS,
    MAX_TRAINING_TITLE_CHARS,
)
from dpr_components.utils.line_files import MAX_LINE_BYTES
from tests.reliability.harness import assert_clear_error, cases
from tests.reliability.training_checks import as_command, train_command

TEN_MB = 10 * 1024 * 1024
GOOD = {
    "question": "who wrote hamlet",
    "answers": ["Shakespeare"],
    "positive_ctxs": [{"title": "Hamlet", "text": "Hamlet is a tragedy by William Shakespeare."}],
    "hard_negative_ctxs": [{"title": "Everest", "text": "Mount Everest is the highest mountain."}],
}


def _with(**changes: object) -> dict:
    return {**GOOD, **changes}


# record on line 3 of a JSON lines file -> what the error must name
OVERSIZED = {
    "a question of 40,000 characters": (
        _with(question="why " * 10_000),
        ("line 3", "field 'question'", f"{MAX_TRAINING_QUESTION_CHARS:,}"),
    ),
    "a passage of 200,000 characters": (
        _with(positive_ctxs=[{"title": "T", "text": "word " * 40_000}]),
        ("line 3", "field 'positive_ctxs[0].text'", f"{MAX_TRAINING_PASSAGE_CHARS:,}"),
    ),
    "a hard negative's title of 5,000 characters": (
        _with(hard_negative_ctxs=[GOOD["hard_negative_ctxs"][0], {"title": "t" * 5_000, "text": "x"}]),
        ("line 3", "field 'hard_negative_ctxs[1].title'", f"{MAX_TRAINING_TITLE_CHARS:,}"),
    ),
}


def _train(data: Path, tmp_path: Path):
    return train_command(["--data", str(data), "--out", str(tmp_path / "run"), "--set", "batch_size=2"])


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@cases("record, fragments", OVERSIZED)
@pytest.mark.reliability(category="training data", expect="clear error")
def test_oversized_field(tmp_path: Path, record: dict, fragments: tuple[str, ...]) -> None:
    """Training DPR (python -m training.retriever.train) on JSON lines with one question, passage or title far too long"""
    data = _jsonl(tmp_path / "train.jsonl", [GOOD, GOOD, record, GOOD])
    assert_clear_error(_train(data, tmp_path), str(data), *fragments)
    assert not (tmp_path / "run").exists(), "training started"


@pytest.mark.parametrize("line", [1, 3], ids=["first line", "third line"])
@pytest.mark.reliability(category="training data", expect="clear error")
def test_ten_megabyte_line(tmp_path: Path, line: int) -> None:
    """Training DPR on JSON lines where one line (a pasted question) is 10 MB long"""
    records = [GOOD, GOOD, GOOD]
    records[line - 1] = _with(question="why " * (TEN_MB // 4))
    data = _jsonl(tmp_path / "train.jsonl", records)
    assert_clear_error(_train(data, tmp_path), f"{data}:{line}", f"longer than {MAX_LINE_BYTES:,} bytes")
    assert not (tmp_path / "run").exists(), "training started"


@pytest.mark.reliability(category="training data", expect="clear error")
def test_json_array_over_the_whole_file_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Training DPR on a JSON array of records larger than a file parsed at once may be (limit lowered to 1 KB)"""
    from dpr_components.dpr_data import loading as training_data

    monkeypatch.setattr(training_data, "MAX_JSON_FILE_BYTES", 1024)
    data = tmp_path / "train.json"
    data.write_text(json.dumps([GOOD] * 20), encoding="utf-8")
    assert_clear_error(_train(data, tmp_path), str(data), "1,024", "JSON lines")


@pytest.mark.reliability(category="training data", expect="clear error")
def test_squad_paragraph_too_long(tmp_path: Path) -> None:
    """Training DPR on SQuAD JSON whose paragraph has 200,000 characters"""
    qas = [{"id": "a", "question": "who?", "answers": [{"text": "me", "answer_start": 0}]}]
    squad = {"version": "1.1", "data": [{"title": "T", "paragraphs": [{"context": "me " * 70_000, "qas": qas}]}]}
    data = tmp_path / "squad.json"
    data.write_text(json.dumps(squad), encoding="utf-8")
    assert_clear_error(_train(data, tmp_path), str(data), "data[0].paragraphs[0]", "field 'context'")


@pytest.mark.reliability(category="training data", expect="clear error")
def test_reader_questions_with_a_ten_megabyte_line(tmp_path: Path) -> None:
    """Reading reader training questions (JSON lines) where one line is 10 MB long"""
    from dpr_components.reader_training.data import read_questions

    records = [
        {"id": str(i), "question": "who?", "answers": ["me"], "positive_ctxs": [{"text": "me"}]} for i in range(3)
    ]
    records[1]["question"] = "why " * (TEN_MB // 4)
    data = _jsonl(tmp_path / "questions.jsonl", records)
    assert_clear_error(as_command(lambda: read_questions(data)), f"{data}:2", "longer than")


@pytest.mark.reliability(category="training data", expect="clear error")
def test_reader_squad_question_too_long(tmp_path: Path) -> None:
    """Reading reader training questions from SQuAD JSON where one question has 40,000 characters"""
    from dpr_components.reader_training.data import read_questions

    qas = [{"id": "a", "question": "why " * 10_000, "answers": [{"text": "me", "answer_start": 0}]}]
    squad = {"version": "1.1", "data": [{"title": "T", "paragraphs": [{"context": "me and you", "qas": qas}]}]}
    data = tmp_path / "squad.json"
    data.write_text(json.dumps(squad), encoding="utf-8")
    assert_clear_error(as_command(lambda: read_questions(data)), str(data), "qas[0]", "field 'question'")
