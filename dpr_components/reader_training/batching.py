"""Training groups: one question's positive row (with its answer spans) and m−1 negative rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from dpr_components.reader_training.data import (
    MinedQuestion,
    Passage,
    PassageLookup,
    positives_of,
)
from dpr_components.readers.inputs import (
    InputSettings,
    Row,
    collate,
    passage_rows,
    prefix_ids,
    token_ids,
    tokenize_passage,
)
from dpr_components.readers.spans import answer_token_spans

MAX_ANSWER_SPANS = 10  # DPR's max_n_answers: occurrences marginalised per positive


@dataclass
class Group:
    """Rows of one question, positive first, and the answer spans as positions in the positive row."""

    rows: list[Row]
    spans: list[tuple[int, int]]


def _positive_row(
    tokenizer: Any,
    question_ids: list[int],
    passage: Passage,
    answers: list[str],
    settings: InputSettings,
    rng: np.random.Generator,
) -> tuple[Row, list[tuple[int, int]]] | None:
    """A window of the passage holding at least one whole answer (chosen at random), with its spans."""
    tokenized = tokenize_passage(tokenizer, passage.text)
    answer_ids = [token_ids(tokenizer, a, 64) for a in answers]
    spans = answer_token_spans(passage.text, tokenized.offsets, tokenized.ids, tokenized.word_ids, answers, answer_ids)
    if not spans:
        return None
    rows = passage_rows(0, prefix_ids(tokenizer, question_ids, passage.title, settings), tokenized, settings)
    choices = []
    for row in rows:
        inside = [(s, e) for s, e in spans if row.window_start <= s and e < row.window_end]
        if inside:
            shift = row.passage_offset - row.window_start
            choices.append((row, [(s + shift, e + shift) for s, e in inside][:MAX_ANSWER_SPANS]))
    if not choices:
        return None
    return choices[int(rng.integers(len(choices)))]


def _first_window(
    tokenizer: Any, question_ids: list[int], passage: Passage, settings: InputSettings, index: int
) -> Row | None:
    """The passage's first window as row ``index`` (DPR truncates passages); None when it has none."""
    prefix = prefix_ids(tokenizer, question_ids, passage.title, settings)
    rows = passage_rows(index, prefix, tokenize_passage(tokenizer, passage.text), settings)
    return rows[0] if rows else None


def build_group(
    question: MinedQuestion,
    lookup: PassageLookup,
    tokenizer: Any,
    passages_per_question: int,
    settings: InputSettings,
    rng: np.random.Generator,
    with_spans: bool = True,
) -> Group | None:
    """One positive (random among those with a findable answer) and up to m−1 random negatives;
    None when no positive holds an answer the tokenizer can locate. Negatives are truncated
    to their first window, as DPR truncates passages. Without ``with_spans`` (selection-only
    training) any positive will do, truncated like a negative, and the group has no spans."""
    question_ids = token_ids(tokenizer, question.question, settings.max_question_tokens)
    positives = positives_of(question, lookup)
    found: tuple[Row, list[tuple[int, int]]] | None = None
    if not with_spans and positives:
        first = _first_window(tokenizer, question_ids, positives[int(rng.integers(len(positives)))], settings, 0)
        found = None if first is None else (first, [])
    for index in rng.permutation(len(positives)) if with_spans else []:
        found = _positive_row(tokenizer, question_ids, positives[int(index)], question.answers, settings, rng)
        if found is not None:
            break
    if found is None:
        return None
    positive, spans = found
    rows = [positive]
    negatives = question.negative_ids
    count = min(passages_per_question - 1, len(negatives))
    for index in sorted(rng.choice(len(negatives), size=count, replace=False)) if count else []:
        row = _first_window(tokenizer, question_ids, lookup[negatives[int(index)]], settings, len(rows))
        if row is not None:
            rows.append(row)
    return Group(rows, spans)


def collate_groups(
    groups: list[Group], passages_per_question: int, pad_id: int, cls_id: int, sep_id: int
) -> dict[str, torch.Tensor]:
    """Tensors for :func:`dpr_components.reader_training.loss.reader_loss` (or ``selection_loss``); short groups
    are filled with masked ``[CLS] [SEP]`` rows so every question has m rows."""
    m = passages_per_question
    rows: list[Row] = []
    row_mask = torch.zeros((len(groups), m), dtype=torch.bool)
    for g, group in enumerate(groups):
        rows.extend(group.rows[:m])
        row_mask[g, : len(group.rows[:m])] = True
        rows.extend(Row(-1, 0, 0, [cls_id, sep_id], 2) for _ in range(m - len(group.rows[:m])))
    max_spans = max(len(g.spans) for g in groups)
    spans = torch.zeros((len(groups), max_spans, 2), dtype=torch.long)
    span_mask = torch.zeros((len(groups), max_spans), dtype=torch.bool)
    for g, group in enumerate(groups):
        if group.spans:  # selection-only groups have none
            spans[g, : len(group.spans)] = torch.tensor(group.spans)
            span_mask[g, : len(group.spans)] = True
    return {**collate(rows, pad_id), "row_mask": row_mask, "spans": spans, "span_mask": span_mask}
