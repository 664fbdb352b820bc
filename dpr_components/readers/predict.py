"""Read a question against passages: one batched forward, passage selection, span decoding.

Passage selection follows DPR (Karpukhin et al. 2020, section 6): a softmax over the passages'
[CLS] selection logits (a long passage counts with its best window). Within a passage the
span score is start logit + end logit; ``span_probability`` is P(start)·P(end) with both
softmaxes over the passage tokens of the window. An optional rank prior weighs each passage by
its retrieval rank r as r^-α: a reader trained with few negatives per question selects passages
less well than the retriever ranked them (docs/benchmarks/reader/reader.md measures it)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

import numpy as np
import torch

from dpr_components.readers.inputs import (
    InputSettings,
    Row,
    TokenizedPassage,
    build_rows,
    collate,
    tokenize_passage,
)
from dpr_components.readers.model import reader_logits
from dpr_components.readers.selection import selection_logits
from dpr_components.readers.spans import best_spans, char_span, extend_to_words
from dpr_components.utils.padding import length_sorted_batches

Ranking = Literal["passage", "combined"]


class NonFiniteLogits(ValueError):
    """The reader computed NaN or infinite logits: no answer it gives would mean anything."""

    def __init__(self, model: str | None = None) -> None:
        reader = f"the reader {model}" if model else "the reader"
        super().__init__(f"{reader} computed NaN or infinite scores: its weights are not usable")


@dataclass(frozen=True)
class SpanPrediction:
    """One answer span in passage ``passage_index``; ``start``/``end`` are character offsets."""

    passage_index: int
    start: int
    end: int
    text: str
    span_score: float
    span_probability: float
    passage_score: float
    rank_weight: float = 1.0  # r^-α of the passage's retrieval rank r (1.0 without a rank prior)
    score_weight: float = 1.0  # e^(γ(s - s_max)) of the passage's incoming score s (1.0 without a score prior)
    selection_weight: float = 1.0  # a, the power P(passage) is raised to
    selection_logit: float = 0.0  # the passage's raw [CLS] selection logit (its best window's), before the softmax

    @property
    def passage_rank_score(self) -> float:
        """What ``ranking="passage"`` orders passages by: P(passage)^a, times the rank and score weights."""
        return self.passage_score**self.selection_weight * self.rank_weight * self.score_weight

    @property
    def score(self) -> float:
        """What ``ranking="combined"`` orders answers by: the passage's :attr:`passage_rank_score` times P(span)."""
        return self.passage_rank_score * self.span_probability

    def ranked_at(self, rank: int, rank_prior: float) -> SpanPrediction:
        """This prediction with the rank weight of a passage retrieved at 1-based ``rank``."""
        return replace(self, rank_weight=rank_weight(rank, rank_prior))


def score_weights(scores: Sequence[float] | None, score_prior: float) -> list[float] | None:
    """``e^(γ(s - max s))`` for each incoming score s, γ = ``score_prior`` (``None`` without a score prior)."""
    if not score_prior:
        return None
    if scores is None:
        raise ValueError(f"score_prior {score_prior} needs each passage's incoming score")
    top = max(scores)
    return [math.exp(score_prior * (s - top)) for s in scores]


def rank_weight(rank: int, rank_prior: float) -> float:
    """``rank^-rank_prior``: how much the retriever's order counts for the passage at 1-based ``rank``."""
    if rank < 1:
        raise ValueError(f"ranks start at 1, got {rank}")
    return float(rank) ** -rank_prior


@dataclass(frozen=True)
class ReadSettings:
    """Decoding options: answer length in tokens, spans kept per passage, how answers are ranked.

    ``ranking="passage"`` is DPR's: passages by selection probability, then spans within each.
    ``ranking="combined"`` ranks all spans by P(passage)·P(span).
    ``rank_prior`` α > 0 multiplies either by r^-α, r = the passage's 1-based position in the
    input (the retriever's order); 0 ignores the order, as DPR does. ``score_prior`` γ > 0 multiplies
    either by e^(γs), s = the passage's incoming score (e.g. a ``PassageRanker``'s). ``selection_weight``
    a raises P(passage) to the power a (1: DPR's; 0: the reader's own selection ignored).
    ``length_penalty`` β > 0 is a prior for short answers: a span of n tokens scores start + end
    logit − β(n−1), and its probability is P(start)·P(end)·e^(−β(n−1)); 0 is DPR's decoding."""

    max_answer_length: int = 10
    spans_per_passage: int = 1
    ranking: Ranking = "passage"
    batch_size: int | None = None
    rank_prior: float = 0.0
    length_penalty: float = 0.0
    score_prior: float = 0.0
    selection_weight: float = 1.0

    def __post_init__(self) -> None:
        if self.max_answer_length <= 0:
            raise ValueError(f"max_answer_length must be positive, got {self.max_answer_length}")
        if self.spans_per_passage <= 0:
            raise ValueError(f"spans_per_passage must be positive, got {self.spans_per_passage}")
        if self.ranking not in ("passage", "combined"):
            raise ValueError(f"ranking must be 'passage' or 'combined', got {self.ranking!r}")
        if self.batch_size is not None and self.batch_size <= 0:
            raise ValueError(f"batch_size must be positive or None, got {self.batch_size}")
        for name in ("rank_prior", "length_penalty", "score_prior", "selection_weight"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{name} must be a number, got {value!r}")
            if not 0 <= value <= 10:
                raise ValueError(f"{name} must be between 0 and 10, got {value}")


# Rows are read in batches of similar length, so short passages are not padded to the longest: a
# question's 20 hybrid passages in three length-sorted batches take a fifth less time than in one
# padded batch on one thread (docs/benchmarks/reader/ranker_latency.md).
ROWS_PER_BATCH = 8


def length_batches(rows: Sequence[Row], batch_size: int | None) -> list[list[int]]:
    """Indices of ``rows`` in batches of at most ``batch_size`` (default :data:`ROWS_PER_BATCH`), shortest
    rows first and the batches as even in size as they can be."""
    return length_sorted_batches([len(row.input_ids) for row in rows], batch_size or ROWS_PER_BATCH)


@torch.inference_mode()
def batched_forward(
    rows: list[Row],
    pad_id: int,
    batch_size: int | None,
    bf16: bool,
    forward: Callable[[Any, Any], Any],
    max_length: int | None = None,
) -> list[Any]:
    """``forward(input_ids, attention_mask)`` over ``rows`` in length-sorted batches: one result per batch,
    in the order of :func:`length_batches` (which gives each batch's rows)."""
    results = []
    for indices in length_batches(rows, batch_size):
        batch = collate([rows[i] for i in indices], pad_id, max_length)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            results.append(forward(batch["input_ids"], batch["attention_mask"]))
    return results


def row_logits(
    reader: torch.nn.Module,
    rows: list[Row],
    pad_id: int,
    batch_size: int | None,
    bf16: bool,
    max_length: int | None = None,
) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """(start logits, end logits) over each row's passage tokens, and its selection logit, in the order of
    ``rows``; ``max_length``: the rows' limit, within which batches are padded to a rounded length."""
    out: list[tuple[np.ndarray, np.ndarray, float] | None] = [None] * len(rows)
    batches = batched_forward(
        rows, pad_id, batch_size, bf16, lambda ids, mask: reader_logits(reader, ids, mask), max_length
    )
    for indices, (start_logits, end_logits, relevance_logits) in zip(
        length_batches(rows, batch_size), batches, strict=True
    ):
        start, end, relevance = start_logits.numpy(), end_logits.numpy(), relevance_logits.numpy()
        if not (np.isfinite(start).all() and np.isfinite(end).all() and np.isfinite(relevance).all()):
            raise NonFiniteLogits()
        for position, i in enumerate(indices):
            row = rows[i]
            window = slice(row.passage_offset, row.passage_offset + row.n_passage_tokens)
            out[i] = (start[position, window], end[position, window], float(relevance[position]))
    return cast(list[tuple[np.ndarray, np.ndarray, float]], out)  # every row belongs to one batch


def row_relevance(
    reader: Any, rows: list[Row], pad_id: int, batch_size: int | None, bf16: bool, max_length: int | None = None
) -> list[float]:
    """Each row's selection logit alone (:func:`~dpr_components.readers.selection.selection_logits`), in the
    order of ``rows``."""
    out = [0.0] * len(rows)
    batches = batched_forward(
        rows, pad_id, batch_size, bf16, lambda ids, mask: selection_logits(reader, ids, mask), max_length
    )
    for indices, logits in zip(length_batches(rows, batch_size), batches, strict=True):
        relevance = logits.numpy()
        if not np.isfinite(relevance).all():
            raise NonFiniteLogits()
        for position, i in enumerate(indices):
            out[i] = float(relevance[position])
    return out


def _log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max()
    return shifted - np.log(np.exp(shifted).sum())


def best_relevance(rows: Sequence[Row], relevance: Sequence[float]) -> dict[int, float]:
    """Each passage's selection logit: the best of its windows' rows (``passage index -> logit``);
    ``relevance`` holds each row's logit."""
    best: dict[int, float] = {}
    for row, logit in zip(rows, relevance, strict=True):
        best[row.passage_index] = max(float(logit), best.get(row.passage_index, -math.inf))
    return best


def passage_relevance(prepared: ReaderInput, relevance: Sequence[float]) -> list[float]:
    """Each passage's selection logit from its rows' ``relevance`` (``-inf`` for a passage without tokens)."""
    best = best_relevance(prepared.rows, relevance)
    return [best.get(i, -math.inf) for i in range(prepared.passages)]


def passage_probabilities(
    rows: Sequence[Row], logits: Sequence[tuple[np.ndarray, np.ndarray, float]]
) -> dict[int, float]:
    """The selection head's probability of each passage (softmax over the passages of the rows of its
    best window): ``passage index -> probability``."""
    selection = best_relevance(rows, [relevance for _, _, relevance in logits])
    indices = sorted(selection)
    probabilities = np.exp(_log_softmax(np.array([selection[i] for i in indices])))
    return dict(zip(indices, probabilities.tolist(), strict=True))


@dataclass
class ReaderInput:
    """One question's passages as model rows: the tokenizer's part of reading, done apart from the
    model's so that a tokenizer (not safe to share between threads) can be locked alone."""

    passages: int
    tokenized: list[TokenizedPassage]
    rows: list[Row]
    pad_id: int
    max_length: int | None = None  # the rows' limit: batches are padded up to a rounded length within it


def reader_input(
    tokenizer: Any,
    question: str,
    passages: Sequence[tuple[str | None, str]],
    inputs: InputSettings = InputSettings(),
    tokenized: Sequence[TokenizedPassage] | None = None,
) -> ReaderInput:
    """Tokenise ``question`` with each ``(title, text)`` passage into rows; ``tokenized`` may give the
    passages already tokenised."""
    if not isinstance(question, str) or not question.strip():
        raise ValueError("the question is empty")
    if tokenized is None:
        tokenized = [tokenize_passage(tokenizer, text) for _, text in passages]
    rows = build_rows(
        tokenizer, question, [(title, tok) for (title, _), tok in zip(passages, tokenized, strict=True)], inputs
    )
    return ReaderInput(len(passages), list(tokenized), rows, tokenizer.pad_token_id, inputs.max_length)


def input_relevance(
    reader: torch.nn.Module, prepared: ReaderInput, batch_size: int | None = None, bf16: bool = False
) -> list[float]:
    """The selection head's logit for each passage of ``prepared`` (the best of its windows): how relevant
    the reader finds it read with the question, computed without the span logits (:func:`row_relevance`).
    A passage without tokens gets ``-inf``."""
    return passage_relevance(
        prepared, row_relevance(reader, prepared.rows, prepared.pad_id, batch_size, bf16, prepared.max_length)
    )


def read(
    reader: torch.nn.Module,
    tokenizer: Any,
    question: str,
    passages: Sequence[tuple[str | None, str]],
    inputs: InputSettings = InputSettings(),
    settings: ReadSettings = ReadSettings(),
    bf16: bool = False,
    tokenized: Sequence[TokenizedPassage] | None = None,
    scores: Sequence[float] | None = None,
) -> list[SpanPrediction]:
    """All candidate answers for ``question`` in ``(title, text)`` passages, best first.

    Passages without tokens are never answered from; ``tokenized`` may give passages already tokenised;
    ``scores`` are the passages' incoming scores (for a score prior)."""
    return read_input(reader, reader_input(tokenizer, question, passages, inputs, tokenized), settings, bf16, scores)


def read_input(
    reader: torch.nn.Module,
    prepared: ReaderInput,
    settings: ReadSettings = ReadSettings(),
    bf16: bool = False,
    scores: Sequence[float] | None = None,
) -> list[SpanPrediction]:
    """:func:`read` of an input already tokenised (no tokenizer needed); ``scores``: each passage's incoming
    score, needed by a score prior."""
    rows, tokenized = prepared.rows, prepared.tokenized
    weights_by_score = score_weights(scores, settings.score_prior)
    if not rows:
        return []
    logits = row_logits(reader, rows, prepared.pad_id, settings.batch_size, bf16, prepared.max_length)
    passage_probability = passage_probabilities(rows, logits)
    selection = best_relevance(rows, [relevance for _, _, relevance in logits])
    indices = sorted(passage_probability)

    candidates: dict[int, dict[tuple[int, int], SpanPrediction]] = {i: {} for i in indices}
    for row, (start, end, _) in zip(rows, logits, strict=True):
        passage = tokenized[row.passage_index]
        log_start, log_end = _log_softmax(start), _log_softmax(end)
        word_ids = passage.word_ids[row.window_start : row.window_end]
        for span in best_spans(
            start, end, settings.max_answer_length, settings.spans_per_passage, settings.length_penalty
        ):
            s, e = extend_to_words(span.start, span.end, word_ids)
            char_start, char_end = char_span(passage.offsets, row.window_start + s, row.window_start + e)
            previous = candidates[row.passage_index].get((char_start, char_end))
            if previous is not None and previous.span_score >= span.score:
                continue  # the same span seen in an overlapping window
            candidates[row.passage_index][(char_start, char_end)] = SpanPrediction(
                passage_index=row.passage_index,
                start=char_start,
                end=char_end,
                text=passage.text[char_start:char_end],
                span_score=span.score,
                span_probability=float(
                    np.exp(
                        log_start[span.start] + log_end[span.end] - settings.length_penalty * (span.end - span.start)
                    )
                ),
                passage_score=passage_probability[row.passage_index],
                rank_weight=rank_weight(row.passage_index + 1, settings.rank_prior),
                score_weight=1.0 if weights_by_score is None else weights_by_score[row.passage_index],
                selection_weight=settings.selection_weight,
                selection_logit=selection[row.passage_index],
            )
    per_passage = {i: _non_overlapping(list(c.values()), settings.spans_per_passage) for i, c in candidates.items()}
    if settings.ranking == "combined":
        return sorted((p for spans in per_passage.values() for p in spans), key=lambda p: -p.score)
    weights = {
        i: passage_probability[i] ** settings.selection_weight
        * rank_weight(i + 1, settings.rank_prior)
        * (1.0 if weights_by_score is None else weights_by_score[i])
        for i in indices
    }
    ordered_passages = sorted(indices, key=lambda i: -weights[i])
    return [p for i in ordered_passages for p in per_passage[i]]


def _non_overlapping(spans: list[SpanPrediction], limit: int) -> list[SpanPrediction]:
    """Best spans by span score, skipping any that overlaps (in characters) one already kept."""
    kept: list[SpanPrediction] = []
    for span in sorted(spans, key=lambda p: -p.span_score):
        if len(kept) == limit:
            break
        if all(span.end <= k.start or k.end <= span.start for k in kept):
            kept.append(span)
    return kept
