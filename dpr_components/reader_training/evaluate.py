"""Exact match and F1 of a reader's top answer over questions with given passages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from dpr_components.evaluation.answer_metrics import exact_match, f1
from dpr_components.reader_training.data import MinedQuestion, Passage, PassageLookup
from dpr_components.readers.inputs import InputSettings
from dpr_components.readers.predict import ReadSettings, read


@dataclass
class ReadingCase:
    """A question, its accepted answers and the passages the reader gets."""

    question: str
    answers: list[str]
    passages: list[Passage]


@dataclass
class ReadingScores:
    exact_match: float  # percent
    f1: float  # percent
    n: int
    predictions: list[str | None]


def evaluate_reader(
    reader: Any,
    tokenizer: Any,
    cases: Sequence[ReadingCase],
    inputs: InputSettings = InputSettings(),
    settings: ReadSettings = ReadSettings(),
    bf16: bool = False,
    progress: bool = False,
) -> ReadingScores:
    """EM/F1 (SQuAD normalisation, best over gold answers) of the top answer per case."""
    if not cases:
        raise ValueError("no questions to evaluate")
    was_training = reader.training
    reader.eval()
    predictions: list[str | None] = []
    for case in tqdm(cases, desc="Reading", unit="q", disable=not progress):
        passages = [(p.title, p.text) for p in case.passages]
        answers = read(reader, tokenizer, case.question, passages, inputs, settings, bf16)
        predictions.append(answers[0].text if answers else None)
    reader.train(was_training)
    em = [exact_match(p, c.answers) for p, c in zip(predictions, cases, strict=True)]
    f = [f1(p, c.answers) for p, c in zip(predictions, cases, strict=True)]
    return ReadingScores(100 * float(np.mean(em)), 100 * float(np.mean(f)), len(cases), predictions)


def dev_cases(
    questions: Sequence[MinedQuestion], lookup: PassageLookup, passages: int, seed: int = 0
) -> list[ReadingCase]:
    """Dev reading cases: ``gold`` questions read their paragraph among ``passages``−1 mined
    negatives (order shuffled, fixed by ``seed``); ``retrieved`` ones read their top retrieved passages."""
    cases = []
    rng = np.random.default_rng(seed)
    for q in questions:
        if q.kind == "gold" and q.gold is not None:
            chosen = [q.gold] + [lookup[i] for i in q.negative_ids[: passages - 1]]
            chosen = [chosen[int(i)] for i in rng.permutation(len(chosen))]
        else:
            chosen = [lookup[i] for i in q.top_ids[:passages]]
        cases.append(ReadingCase(q.question, q.answers, chosen))
    return cases
