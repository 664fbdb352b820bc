"""The log window of a training run: the steps since the last log entry, and this process's
segment of the run (since it started or resumed).

The shared loop adds every step to it and starts a new window after each log entry; the trainer
turns it into the entry's numbers (means over the window's updating steps, rates per second)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass
class LogWindow:
    """Sums of the numbers of the window's updating steps (skipped steps add none), the last
    updating step's numbers, and the examples of all its steps."""

    elapsed_before: float = 0.0  # seconds of training before this process's segment
    segment_start: float = field(default_factory=time.perf_counter)
    segment_examples: int = 0
    start: float = field(init=False)
    steps: int = 0
    examples: int = 0
    sums: dict[str, float] = field(default_factory=dict)
    last: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.start = self.segment_start

    def add(self, examples: int, numbers: Mapping[str, float] | None) -> None:
        """Count a step of ``examples``; ``numbers`` of an updating step (None: a skipped one)."""
        self.segment_examples += examples
        self.examples += examples
        if numbers is None:
            return
        self.steps += 1
        for name, value in numbers.items():
            self.sums[name] = self.sums.get(name, 0.0) + value
        self.last = dict(numbers)

    def mean(self, name: str) -> float:
        """The mean of ``name`` over the window's updating steps."""
        return self.sums.get(name, 0.0) / max(self.steps, 1)

    def rate(self, count: float, now: float) -> float:
        """``count`` per second of the window."""
        return count / max(now - self.start, 1e-9)

    def elapsed(self, now: float) -> float:
        """Seconds of training in the whole run, resumed segments included."""
        return self.elapsed_before + now - self.segment_start

    def segment_speed(self, now: float) -> float:
        """Examples per second of this process's segment (0 when it trained on none)."""
        return self.segment_examples / (now - self.segment_start) if self.segment_examples else 0.0

    def restart(self, now: float) -> None:
        """Start a new window at ``now``."""
        self.start, self.steps, self.examples, self.sums, self.last = now, 0, 0, {}, {}
