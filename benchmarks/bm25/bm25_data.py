"""Benchmark inputs: the pool split into DPR passages and the dev questions, written as the
JSONL files the engine workers read."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from dpr_components.corpus.passages import split_documents
from dpr_components.utils.atomic_files import atomic_write_text

DATASETS = {"nq": "nq/dev.jsonl", "squad": "squad/dev.jsonl"}


@dataclass(frozen=True)
class Question:
    qid: str
    dataset: str
    question: str
    answers: tuple[str, ...]


@dataclass
class BenchmarkData:
    passage_ids: list[str]
    titles: list[str]
    texts: list[str]
    questions: list[Question]

    def contents(self, i: int) -> str:
        """What every engine indexes for passage ``i``: title, newline, text."""
        return f"{self.titles[i]}\n{self.texts[i]}"


def _read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        raise FileNotFoundError(f"benchmark input {path} does not exist (set DPR_DATA_DIR?)")
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load(data_dir: Path) -> BenchmarkData:
    documents = _read_jsonl(data_dir / "wiki" / "documents.jsonl")
    passages = list(split_documents((d["id"], d["title"], d["text"]) for d in documents))
    questions = [
        Question(f"{dataset}:{row['id']}", dataset, row["question"], tuple(row["answers"]))
        for dataset, relative in DATASETS.items()
        for row in _read_jsonl(data_dir / relative)
    ]
    return BenchmarkData(
        passage_ids=[p.id for p in passages],
        titles=[p.title for p in passages],
        texts=[p.text for p in passages],
        questions=questions,
    )


def subset(data: BenchmarkData, n_passages: int, n_questions: int, seed: int) -> BenchmarkData:
    """A seeded random sample of passages and questions (in their original order)."""
    rng = random.Random(seed)
    keep = sorted(rng.sample(range(len(data.passage_ids)), min(n_passages, len(data.passage_ids))))
    picked = sorted(rng.sample(range(len(data.questions)), min(n_questions, len(data.questions))))
    return BenchmarkData(
        passage_ids=[data.passage_ids[i] for i in keep],
        titles=[data.titles[i] for i in keep],
        texts=[data.texts[i] for i in keep],
        questions=[data.questions[i] for i in picked],
    )


def write_inputs(data: BenchmarkData, folder: Path) -> tuple[Path, Path]:
    """Write ``collection/passages.jsonl`` (``{"id", "contents"}``) and ``questions.jsonl``."""
    collection = folder / "collection"
    passage_lines = (
        json.dumps({"id": pid, "contents": data.contents(i)}, ensure_ascii=False)
        for i, pid in enumerate(data.passage_ids)
    )
    atomic_write_text(collection / "passages.jsonl", "\n".join(passage_lines) + "\n")
    question_lines = (json.dumps({"qid": q.qid, "question": q.question}, ensure_ascii=False) for q in data.questions)
    questions = folder / "questions.jsonl"
    atomic_write_text(questions, "\n".join(question_lines) + "\n")
    return collection, questions
