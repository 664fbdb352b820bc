"""Does a passage contain an answer? DPR's rule: the answer's tokens appear as a contiguous
run in the passage's tokens, after Unicode NFD normalisation and lower-casing. Tokens are
runs of letters, digits and combining marks, or any other single non-space character.
CuratedTREC answers are regular expressions instead (``mode="regex"``)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

import regex

MatchMode = Literal["string", "regex"]

_TOKEN = regex.compile(r"[\p{L}\p{N}\p{M}]+|[^\p{Z}\p{C}]", flags=regex.UNICODE)


def answer_tokens(text: str) -> list[str]:
    """Lower-cased tokens of NFD-normalised text, as DPR's evaluation tokenises it."""
    return [t.lower() for t in _TOKEN.findall(unicodedata.normalize("NFD", text))]


@lru_cache(maxsize=65536)
def _answer_tokens_cached(answer: str) -> tuple[str, ...]:
    return tuple(answer_tokens(answer))


@lru_cache(maxsize=4096)
def _compiled(pattern: str) -> regex.Pattern:
    try:
        return regex.compile(pattern, flags=regex.IGNORECASE | regex.UNICODE | regex.MULTILINE)
    except regex.error as error:
        raise ValueError(f"answer pattern {pattern!r} is not a valid regular expression: {error}") from error


def check_answer_pattern(pattern: str) -> None:
    """``ValueError`` naming ``pattern`` when it is not a valid regular expression (``regex`` mode)."""
    _compiled(pattern)


def _contains_run(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    n = len(needle)
    if n == 0:
        return False
    first = needle[0]
    for i in range(len(haystack) - n + 1):
        if haystack[i] == first and tuple(haystack[i : i + n]) == tuple(needle):
            return True
    return False


def has_answer(answers: Sequence[str], text: str, mode: MatchMode = "string") -> bool:
    """True if ``text`` contains any of ``answers`` (token runs, or regex search in ``regex`` mode)."""
    if mode == "regex":
        normalized = unicodedata.normalize("NFD", text)
        return any(_compiled(pattern).search(normalized) is not None for pattern in answers)
    if mode != "string":
        raise ValueError(f"match mode must be 'string' or 'regex', got {mode!r}")
    tokens = answer_tokens(text)
    return any(_contains_run(tokens, _answer_tokens_cached(answer)) for answer in answers)
