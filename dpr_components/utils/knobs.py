"""Settings that size the work (threads, counts, sizes): read as whole numbers and checked against a range,
with one message for every one of them (docs/threads.md, "Bounds").

A value outside its range is refused, never quietly capped: the user learns the range and chooses.
An environment variable reads ``DPR_READ_THREADS=10000: must be a whole number from 1 to 2 (the usable
cores); unset it or choose a value in that range``; an option ``--top-k 0: must be a whole number from
1 to 10,000; choose a value in that range``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

UNSET_OR_CHOOSE = "unset it or choose a value in that range"
CHOOSE = "choose a value in that range"


@dataclass(frozen=True)
class Bound:
    """The whole numbers a setting takes: ``low`` to ``high``; ``why`` says where ``high`` comes from."""

    low: int
    high: int
    why: str = ""

    def describe(self) -> str:
        """``from 1 to 2 (the usable cores)``."""
        return f"from {self.low:,} to {self.high:,}" + (f" ({self.why})" if self.why else "")


def whole_number(text: str) -> int | None:
    """``text`` as an integer when it is one written in ASCII digits (an optional sign, spaces around), else None."""
    body = text.strip()
    digits = body[1:] if body[:1] in "+-" else body
    if not (digits.isascii() and digits.isdigit()):
        return None
    return int(body)


def check_value(label: str, value: object, bound: Bound, remedy: str = CHOOSE) -> int:
    """``value`` (an int, or the text given) as an int inside ``bound``; a one-line ``ValueError`` that
    starts with ``label`` (``--top-k 0`` or ``DPR_READ_THREADS=10000``) otherwise. A bool is not a number."""
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    else:
        number = whole_number(str(value))
    if number is None or not bound.low <= number <= bound.high:
        raise ValueError(f"{label}: must be a whole number {bound.describe()}; {remedy}")
    return number


def check_option(option: str, value: object, bound: Bound) -> int:
    """A command-line option's value inside ``bound``, or ``--option VALUE: must be ...``."""
    shown = value if isinstance(value, int) and not isinstance(value, bool) else repr(str(value))
    return check_value(f"{option} {shown}", value, bound)


def read_variable(name: str, bound: Bound, environ: Mapping[str, str] = os.environ) -> int | None:
    """Environment variable ``name`` as a whole number inside ``bound``; None when unset or empty."""
    text = environ.get(name)
    if text is None or not text.strip():
        return None
    shown = text.strip() if whole_number(text) is not None else repr(text)
    return check_value(f"{name}={shown}", text, bound, UNSET_OR_CHOOSE)
