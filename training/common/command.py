"""How the recipes' small commands end: print the result, or the error and exit code 2."""

from __future__ import annotations

import sys
from collections.abc import Callable


def print_outcome(action: Callable[[], object], errors: tuple[type[Exception], ...]) -> int:
    """Run ``action`` and print what it returns (exit code 0), or print one of ``errors`` (exit code 2)."""
    try:
        out = action()
    except errors as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(out)
    return 0
