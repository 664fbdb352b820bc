"""Does a passage contain an answer? DPR's rule: the answer's tokens appear as a contiguous
run in the passage's tokens, after Unicode NFD normalisation and lower-casing. Tokens are
runs of letters, digits and combining marks, or any other single non-space character.
CuratedTREC answers are regular expressions instead (``mode="regex"``)."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Literal

import regex

MatchMode = Literal["string", "regex"]

_TOKEN = regex.compile(r"[\p{L}\p{N}\p{M}]+|[^\p{Z}\p{C}]", flags=regex.UNICODE)


def answer_tokens(text: str) -> list[str]:
    """Lower-cased tokens of NFD-normalised text, as DPR's evaluation tokenises it."""
    return [t.lower() for t in _TOKEN.findall(unicodedata.normalize("NFD", text))]


def joined_tokens(text: str) -> str:
    """The tokens of ``text`` joined by spaces, with a space at each end."""
    # Tokens never contain spaces, so " a b c " contains " b c " exactly when the token run (b, c)
    # occurs: a passage contains an answer when its joined tokens contain the answer's.
    return " " + " ".join(answer_tokens(text)) + " "


@lru_cache(maxsize=65536)
def _joined_answer(answer: str) -> str:
    return joined_tokens(answer)


@lru_cache(maxsize=4096)
def _compiled(pattern: str) -> regex.Pattern:
    try:
        return regex.compile(pattern, flags=regex.IGNORECASE | regex.UNICODE | regex.MULTILINE)
    except regex.error as error:
        raise ValueError(f"answer pattern {pattern!r} is not a valid regular expression: {error}") from error


def check_answer_pattern(pattern: str) -> None:
    """``ValueError`` naming ``pattern`` when it is not a valid regular expression (``regex`` mode)."""
    _compiled(pattern)


def answer_matcher(
    answers: Sequence[str], mode: MatchMode = "string", joined: Callable[[str], str] = joined_tokens
) -> Callable[[str], bool]:
    """The test ``has_answer`` applies to a passage text, prepared once for many passages.

    ``joined``: how a passage's text becomes its joined tokens (a cached version for passages
    matched again and again); not used in ``regex`` mode."""
    if mode == "regex":

        def matches_pattern(text: str) -> bool:
            normalized = unicodedata.normalize("NFD", text)
            return any(_compiled(pattern).search(normalized) is not None for pattern in answers)

        return matches_pattern
    if mode != "string":
        raise ValueError(f"match mode must be 'string' or 'regex', got {mode!r}")
    needles = [needle for needle in (_joined_answer(a) for a in answers) if needle.strip()]

    def contains_answer(text: str) -> bool:
        if not needles:
            return False
        tokens = joined(text)
        return any(needle in tokens for needle in needles)

    return contains_answer


def has_answer(answers: Sequence[str], text: str, mode: MatchMode = "string") -> bool:
    """True if ``text`` contains any of ``answers`` (token runs, or regex search in ``regex`` mode)."""
    return answer_matcher(answers, mode)(text)
