"""The id rule for records (source documents), the same for corpus files, ``records`` sent to the index
route, the passage splitter and ``GET /documents/{id}``.

A record id is 1 to ``MAX_RECORD_ID_CHARS`` characters: letters, marks, digits, punctuation, symbols and
the space U+0020, not at either end. Control characters (a newline, a tab, NUL), invisible ones
(zero-width spaces, direction marks, a byte-order mark), other spaces, private-use and unassigned code
points are refused: an id is shown on the ask page and put in a URL, and two ids that look the same
would be two documents. The ids ``.`` and ``..`` are refused too: in a URL path they are dot segments,
which browsers and HTTP clients remove before the request leaves, so ``/documents/..`` could never
reach the route.

A passage id is ``<record id>#<n>`` (``hamlet#0``), and a record id may not end in ``#`` followed by
digits, the form of a passage id. So no record id is ever a passage id, and a passage id names one
record and one passage: the last ``#`` separates them. The rule refuses only the ids that look like
passage ids rather than every ``#``, so ids such as ``Hamlet#Plot`` or ``https://example.org/a#b`` stay
valid, and passage ids keep the form they had: stores, their re-indexing (which replaces a document's
passages by their ids) and the embedding cache (keyed by title and text) are unchanged. A record indexed
before under an id the rule now refuses stays in its store and is found by searches; re-indexing it
needs a new id."""

from __future__ import annotations

import re
import unicodedata

from dpr_components.utils.validation import short_repr

MAX_RECORD_ID_CHARS = 1_000
PASSAGE_SEPARATOR = "#"
MAX_PASSAGE_DIGITS = 9  # a passage number has fewer: a record holds at most 8 MiB of text
# The longest id ``GET /documents/{id}`` looks up: a passage id of a record id of the longest length.
MAX_LOOKUP_ID_CHARS = MAX_RECORD_ID_CHARS + len(PASSAGE_SEPARATOR) + MAX_PASSAGE_DIGITS

_PASSAGE_FORM = re.compile(rf"(?s)(.*){re.escape(PASSAGE_SEPARATOR)}([0-9]+)")
_VISIBLE = ("L", "M", "N", "P", "S")
_KINDS = {
    "Cc": "a control character",
    "Cf": "an invisible formatting character",
    "Cs": "a lone surrogate",
    "Co": "a private-use character",
    "Cn": "an unassigned code point",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
    "Zs": "a space other than U+0020",
}
ALLOWED = "letters, marks, digits, punctuation, symbols and spaces between them"


def passage_id(record_id: str, index: int) -> str:
    """The id of passage ``index`` of record ``record_id``."""
    return f"{record_id}{PASSAGE_SEPARATOR}{index}"


def split_passage_id(value: str) -> tuple[str, str] | None:
    """The record id and the digits of the passage number when ``value`` ends in ``#`` and digits (the form
    of a passage id), else ``None``."""
    match = _PASSAGE_FORM.fullmatch(value)
    return (match.group(1), match.group(2)) if match else None


def _character_problem(value: str, max_chars: int) -> str | None:
    """What makes ``value`` unfit as an id apart from its form: length, characters, spaces, dot segments."""
    if not value.strip():
        return "is empty"
    if len(value) > max_chars:
        return f"has {len(value):,} characters; an id has at most {max_chars:,}"
    for position, char in enumerate(value):
        if char != " " and unicodedata.category(char)[0] not in _VISIBLE:
            kind = _KINDS.get(unicodedata.category(char), "an invisible character")
            return f"holds U+{ord(char):04X} ({kind}) at character {position}; an id holds {ALLOWED}"
    if value != value.strip(" "):
        return "starts or ends with a space"
    if value in (".", ".."):
        return f"is {value!r}, which a URL path cannot hold (a dot segment)"
    return None


def record_id_problem(value: str) -> str | None:
    """Why ``value`` cannot be a record id, as the end of a sentence ("field 'id' ..."), or ``None``."""
    problem = _character_problem(value, MAX_RECORD_ID_CHARS)
    if problem is not None:
        return problem
    parts = split_passage_id(value)
    if parts is not None:
        record, number = parts
        return (
            f"ends in {short_repr(PASSAGE_SEPARATOR + number, 24)}, the form of a passage id (passage {number[:20]} "
            f"of document {short_repr(record)}); give the document an id that does not end in '#' and digits"
        )
    return None


def check_record_id(value: str, where: str) -> str:
    """``value`` itself when it is a valid record id; otherwise a ``ValueError`` naming ``where`` (the field)."""
    problem = record_id_problem(value)
    if problem is not None:
        raise ValueError(f"{where} {problem}")
    return value


def lookup_id_problem(value: str) -> str | None:
    """Why ``value`` can be neither a record id nor a passage id, or ``None``.

    A passage id's record part is held to the characters and length of the rule only, not to its form, so a
    record indexed before the rule under an id like ``hamlet#0`` is still reached by its passages' ids."""
    if len(value) > MAX_LOOKUP_ID_CHARS:
        return (
            f"has {len(value):,} characters; a document id has at most {MAX_RECORD_ID_CHARS:,}, "
            f"a passage id {MAX_LOOKUP_ID_CHARS:,}"
        )
    parts = split_passage_id(value)
    if parts is None:
        return _character_problem(value, MAX_RECORD_ID_CHARS)
    problem = _character_problem(parts[0], MAX_RECORD_ID_CHARS)
    return None if problem is None else f"is a passage id whose document id {problem}"
