"""Token windows over long passages, best-span decoding, and answer spans in token space.

All token positions here are indices into a passage's own tokens (no question or title);
character offsets come from the fast tokenizer's offset mapping into the passage text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TokenSpan:
    """An inclusive token span ``[start, end]`` with a score (higher is better)."""

    start: int
    end: int
    score: float


def windows(n_tokens: int, size: int, stride: int) -> list[tuple[int, int]]:
    """``[start, end)`` windows of at most ``size`` tokens covering ``n_tokens`` tokens.

    Consecutive windows share ``stride`` tokens, so any span of at most ``stride + 1`` tokens
    lies whole inside at least one window (the window starting last at or before it)."""
    if size <= 0:
        raise ValueError(f"window size must be positive, got {size}")
    if not 0 <= stride < size:
        raise ValueError(f"stride (tokens shared by consecutive windows) must be in [0, {size}), got {stride}")
    if n_tokens <= size:
        return [(0, n_tokens)]
    step = size - stride
    out = []
    start = 0
    while True:
        end = min(start + size, n_tokens)
        out.append((start, end))
        if end == n_tokens:
            return out
        start += step


def best_spans(
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    max_answer_length: int,
    top_n: int = 1,
    length_penalty: float = 0.0,
) -> list[TokenSpan]:
    """The ``top_n`` highest-scoring non-overlapping spans, score = start logit + end logit
    − ``length_penalty`` × (tokens − 1), a prior for short answers (0: DPR's decoding).

    Spans satisfy ``start <= end < start + max_answer_length`` (DPR's span decoding)."""
    if max_answer_length <= 0:
        raise ValueError(f"max_answer_length must be positive, got {max_answer_length}")
    if top_n <= 0:
        raise ValueError(f"top_n must be positive, got {top_n}")
    n = len(start_logits)
    if n == 0:
        return []
    if len(end_logits) != n:
        raise ValueError(f"got {n} start logits but {len(end_logits)} end logits")
    width = min(max_answer_length, n)
    starts = np.arange(n)[:, None]
    ends = starts + np.arange(width)[None, :]
    valid = ends < n
    scores = np.where(valid, start_logits[:, None] + end_logits[np.minimum(ends, n - 1)], -np.inf)
    if length_penalty:
        scores = scores - length_penalty * np.arange(width)[None, :]
    order = np.argsort(-scores, axis=None, kind="stable")
    chosen: list[TokenSpan] = []
    for flat in order:
        if len(chosen) == top_n:
            break
        s, offset = divmod(int(flat), width)
        score = float(scores[s, offset])
        if score == -np.inf:
            break
        e = s + offset
        if any(s <= c.end and c.start <= e for c in chosen):
            continue
        chosen.append(TokenSpan(s, e, score))
    return chosen


def extend_to_words(start: int, end: int, word_ids: Sequence[int | None]) -> tuple[int, int]:
    """Widen a token span so it neither starts nor ends inside a word (no half WordPieces)."""
    while start > 0 and word_ids[start] is not None and word_ids[start - 1] == word_ids[start]:
        start -= 1
    while end + 1 < len(word_ids) and word_ids[end] is not None and word_ids[end + 1] == word_ids[end]:
        end += 1
    return start, end


def char_span(offsets: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    """Character ``[start, end)`` in the passage text covered by tokens ``start..end``."""
    return offsets[start][0], offsets[end][1]


def token_span(offsets: Sequence[tuple[int, int]], char_start: int, char_end: int) -> tuple[int, int] | None:
    """Tokens covering characters ``[char_start, char_end)``, or None if no token lies inside."""
    inside = [i for i, (s, e) in enumerate(offsets) if e > char_start and s < char_end and e > s]
    return (inside[0], inside[-1]) if inside else None


def answer_char_spans(text: str, answers: Sequence[str]) -> list[tuple[int, int]]:
    """Every case-insensitive occurrence of any answer in ``text`` that starts and ends at a word edge."""
    lowered = text.lower()
    found: set[tuple[int, int]] = set()
    for answer in answers:
        needle = answer.strip().lower()
        if not needle:
            continue
        position = lowered.find(needle)
        while position != -1:
            end = position + len(needle)
            # An answer "1957" inside "19571" is not an occurrence of the answer.
            before_ok = position == 0 or not (lowered[position - 1].isalnum() and needle[0].isalnum())
            after_ok = end == len(lowered) or not (lowered[end].isalnum() and needle[-1].isalnum())
            if before_ok and after_ok:
                found.add((position, end))
            position = lowered.find(needle, position + 1)
    return sorted(found)


def answer_token_spans(
    text: str,
    offsets: Sequence[tuple[int, int]],
    token_ids: Sequence[int],
    word_ids: Sequence[int | None],
    answers: Sequence[str],
    answer_token_ids: Sequence[Sequence[int]],
) -> list[tuple[int, int]]:
    """Token spans of all answer occurrences in a passage: text matches, plus whole-word token-id
    matches (which catch occurrences that differ in accents or spacing but tokenise the same)."""
    spans = {span for start, end in answer_char_spans(text, answers) if (span := token_span(offsets, start, end))}
    ids = list(token_ids)
    for answer in answer_token_ids:
        needle = list(answer)
        n = len(needle)
        if n == 0:
            continue
        for i in range(len(ids) - n + 1):
            if ids[i] != needle[0] or ids[i : i + n] != needle:
                continue
            starts_word = i == 0 or word_ids[i - 1] != word_ids[i]
            ends_word = i + n == len(ids) or word_ids[i + n] != word_ids[i + n - 1]
            if starts_word and ends_word:
                spans.add((i, i + n - 1))
    return sorted(spans)
