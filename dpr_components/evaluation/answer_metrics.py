"""Reader answer metrics as defined by the SQuAD v1.1 evaluation (Rajpurkar et al. 2016):
answers are lower-cased, stripped of punctuation and of the articles a/an/the, and
whitespace-normalised; exact match and token F1 are the maximum over the gold answers."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalisation: lower case, drop punctuation and articles, collapse whitespace."""
    text = "".join(char for char in text.lower() if char not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _check_golds(golds: Sequence[str]) -> None:
    if isinstance(golds, str):
        raise TypeError("golds must be a list of answers, not a single string")
    if not golds:
        raise ValueError("golds must contain at least one gold answer")


def _token_f1(prediction: str, gold: str) -> float:
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(gold).split()
    common = sum((Counter(predicted) & Counter(expected)).values())
    if common == 0:
        return 0.0
    precision = common / len(predicted)
    recall = common / len(expected)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str | None, golds: Sequence[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer, else 0.0 (None scores 0)."""
    _check_golds(golds)
    if prediction is None:
        return 0.0
    normalized = normalize_answer(prediction)
    return float(any(normalized == normalize_answer(gold) for gold in golds))


def f1(prediction: str | None, golds: Sequence[str]) -> float:
    """Best token-overlap F1 in [0, 1] between the prediction and any gold answer (None scores 0)."""
    _check_golds(golds)
    if prediction is None:
        return 0.0
    return max(_token_f1(prediction, gold) for gold in golds)
