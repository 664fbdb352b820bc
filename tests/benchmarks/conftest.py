"""What the QA pipeline benchmarks' runs on tiny models share: the packaged pipelines on tiny models
over a small store, three questions (one with a long answer, left out), and the report's path."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.serving import write_pipelines

QUESTIONS = [
    {"question": "who wrote hamlet", "answers": ["William Shakespeare"]},
    {"question": "how high is mount everest", "answers": ["8,849 metres"]},
    {"question": "a question whose answer is long", "answers": ["one two three four five six"]},
]


@dataclass(frozen=True)
class TinyQARun:
    folder: Path  # the pipelines (qa.yml, qa_rerank.yml, ...)
    questions: Path
    out: Path  # the report, without suffix
    arguments: list[str]  # --store, --questions and --out for the benchmark


@pytest.fixture()
def tiny_qa_run(
    tmp_path: Path, indexed_store: Path, tiny_st_dir: Path, tiny_reader_dir: Path, tiny_bert_dir: Path
) -> TinyQARun:
    folder = tmp_path / "pipelines"
    write_pipelines(folder, indexed_store, tiny_st_dir, tiny_reader_dir, tiny_bert_dir, tmp_path / "run")
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    out = tmp_path / "report"
    arguments = ["--store", str(indexed_store), "--questions", str(questions), "--out", str(out)]
    return TinyQARun(folder, questions, out, arguments)
