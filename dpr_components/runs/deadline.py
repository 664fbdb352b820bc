"""A run's time bound: the moment after which it stops at the next safe point (between batches or steps)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable


class Deadline:
    """``minutes`` from now by ``clock`` (None: no bound); :meth:`passed` is asked at each safe point."""

    def __init__(self, minutes: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        if minutes is not None and (
            isinstance(minutes, bool)
            or not isinstance(minutes, (int, float))
            or not math.isfinite(minutes)
            or minutes <= 0
        ):
            raise ValueError(f"max_minutes must be a positive number of minutes, got {minutes!r}")
        self.minutes = minutes
        self._clock = clock
        self._end = None if minutes is None else clock() + 60.0 * minutes
        self.reached = False

    def passed(self) -> bool:
        """Whether the bound is reached (remembered in :attr:`reached` once it is)."""
        if self._end is not None and self._clock() >= self._end:
            self.reached = True
        return self.reached
