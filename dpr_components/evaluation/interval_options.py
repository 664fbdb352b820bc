"""The ``--intervals`` options of ``haystack eval``. Light on purpose: the parser is built before the
evaluation stack (numpy, scipy) is imported."""

from __future__ import annotations

import argparse
from typing import Any

INTERVALS_HELP = (
    "add bootstrap intervals over questions to every metric and, with two or more systems, "
    "a table of differences from the first system (paired bootstrap, McNemar's test); "
    "needs at least 30 questions"
)


def add_interval_options(parser: argparse.ArgumentParser) -> None:
    """``--intervals``, ``--resamples N`` and ``--confidence C``."""
    parser.add_argument("--intervals", action="store_true", help=INTERVALS_HELP)
    parser.add_argument("--resamples", type=int, help="bootstrap resamples with --intervals (default 10000)")
    parser.add_argument("--confidence", type=float, help="interval confidence with --intervals (default 0.95)")


def interval_options(args: Any) -> dict[str, Any] | None:
    """The given ``confidence`` / ``resamples`` (as keyword arguments) when ``--intervals`` is on, else None."""
    given = {name: value for name in ("confidence", "resamples") if (value := getattr(args, name, None)) is not None}
    if not getattr(args, "intervals", False):
        if given:
            raise ValueError("--resamples and --confidence apply only with --intervals")
        return None
    return given
