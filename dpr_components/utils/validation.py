"""Checks on text that users and corpus files hand to the components: queries, words, passages, numbers.

Each check raises ``ValueError`` with a message complete on its own, so the command line can
print it as one line."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import unicodedata
from typing import Any

MAX_QUERY_CHARS = 2_000
MAX_WORD_CHARS = 1_000
MAX_PASSAGE_CHARS = 20_000

# Letters, marks, numbers, punctuation and symbols are visible; separators (Z*) and
# control, format, surrogate, private-use and unassigned code points (C*) are not.
_VISIBLE_CATEGORIES = ("L", "M", "N", "P", "S")
_LONG_WORD = re.compile(rf"\S{{{MAX_WORD_CHARS + 1},}}")
# In a Python string every surrogate code point is unpaired: JSON's escaped pairs are joined on
# parsing, and undecodable command-line bytes become lone surrogates (surrogateescape).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def has_visible_character(text: str) -> bool:
    """True when ``text`` holds at least one character that shows on screen."""
    return any(unicodedata.category(char)[0] in _VISIBLE_CATEGORIES for char in text)


def check_query_is_text(query: Any) -> str:
    """The query itself when it is a string (of any content: :func:`check_query` checks that)."""
    if not isinstance(query, str):
        raise ValueError(f"the query must be text, got {type(query).__name__} {short_repr(query)}")
    return query


def check_query(query: Any, max_chars: int = MAX_QUERY_CHARS) -> str:
    """The query itself when it is usable text; otherwise a ``ValueError`` saying why.

    A query of only spaces or invisible characters (zero-width spaces, a byte-order mark,
    control characters) is empty: searching for it would return arbitrary passages."""
    check_query_is_text(query)
    surrogate = describe_lone_surrogate(query)
    if surrogate:
        raise ValueError(f"the query is not valid Unicode: {surrogate}")
    if not has_visible_character(query):
        raise ValueError("the query is empty: give a question or search text (it has no visible character)")
    if len(query) > max_chars:
        raise ValueError(f"the query has {len(query):,} characters; the limit is {max_chars:,}")
    return query


def check_positive_int(name: str, value: Any) -> int:
    """``value`` itself when it is a positive integer (not a bool): a ``top_k``, a cutoff, a constant."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {short_repr(value)}")
    return value


def check_question_field(value: Any, where: str, error: type[ValueError] = ValueError) -> str:
    """The ``question`` field of a record, stripped; ``error`` names ``where`` when it is not non-empty text."""
    if not isinstance(value, str):
        raise error(f"{where}: field 'question': expected a string, got {type(value).__name__}")
    if not value.strip():
        raise error(f"{where}: field 'question' is empty")
    return value.strip()


def find_long_word(text: str) -> str | None:
    """The first run of more than ``MAX_WORD_CHARS`` non-space characters in ``text``, if any."""
    match = _LONG_WORD.search(text)
    return match.group(0) if match else None


def describe_lone_surrogate(text: str) -> str | None:
    """Where ``text`` holds a lone surrogate (not a character: it cannot be encoded as UTF-8), or ``None``."""
    match = _LONE_SURROGATE.search(text)
    if match is None:
        return None
    return (
        f"a lone surrogate U+{ord(match.group(0)):04X} at character {match.start()} "
        "(bytes that are not UTF-8, or a broken \\u escape)"
    )


def describe_long_word(word: str) -> str:
    return f"a word of {len(word):,} characters without spaces (limit {MAX_WORD_CHARS:,}), starting {short_repr(word[:20])}"


def check_finite(name: str, value: Any) -> float:
    """``value`` as a float when it is a finite real number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {short_repr(value)}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    return float(value)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a finite number (JSON has no NaN or Infinity)")


def _parse_int(digits: str) -> int:
    # Python refuses to convert more digits than this, with a hint about its own settings.
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)() or len(digits)
    if len(digits.lstrip("-")) > limit:
        raise ValueError(f"a number of {len(digits.lstrip('-')):,} digits is too long (at most {limit:,})")
    return int(digits)


def strict_json_loads(text: str) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and ``-Infinity``, which Python accepts but JSON does not,
    and integers too long for Python to convert."""
    return json.loads(text, parse_constant=_reject_constant, parse_int=_parse_int)


def load_json_text(text: str, where: str, line_numbers: bool = False) -> Any:
    """Strict JSON from ``text``; an error names ``where`` (and the line when ``line_numbers``)."""
    try:
        return strict_json_loads(text)
    except json.JSONDecodeError as error:
        place = f"{where}:{error.lineno}" if line_numbers else where
        raise ValueError(f"{place}: invalid JSON ({error.msg} at column {error.colno})") from None
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr`` clipped to ``limit`` characters, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def model_and_max_length(value: str) -> tuple[str, int]:
    """A command-line ``MODEL:MAX_LENGTH`` (the model may hold colons: ``bundled:reader-minilm:256``)."""
    model, _, length = value.rpartition(":")
    if not model or not length.isdigit() or int(length) <= 0:
        raise argparse.ArgumentTypeError(f"expected MODEL:MAX_LENGTH with a positive length, got {value!r}")
    return model, int(length)


def check_documents(name: str, documents: Any) -> list[Any]:
    """``documents`` when it is a list of Haystack ``Document``; ``ValueError`` naming ``name`` and the first wrong item."""
    from haystack import Document

    if not isinstance(documents, list):
        raise ValueError(f"{name} must be a list of Documents, got {type(documents).__name__}")
    for index, document in enumerate(documents):
        if not isinstance(document, Document):
            raise ValueError(f"{name}[{index}] must be a Document, got {type(document).__name__}")
    return documents
