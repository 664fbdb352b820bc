"""Named crash points for fault-injection tests.

``fault_point("store.after_commit")`` kills the process with SIGKILL when the environment
variable ``DPR_FAULT_POINT`` names that point (optionally ``name:N`` to die on its N-th pass).
Unset, it costs one dictionary lookup. The reliability suite uses it to prove that a crash at
each step of a write loses nothing that was saved before."""

from __future__ import annotations

import os
import signal

_ENV = "DPR_FAULT_POINT"
_passes: dict[str, int] = {}


def fault_point(name: str) -> None:
    """Die here, like ``kill -9``, if ``DPR_FAULT_POINT`` asks for it."""
    wanted = os.environ.get(_ENV)
    if not wanted:
        return
    point, _, count = wanted.partition(":")
    if point != name:
        return
    _passes[name] = _passes.get(name, 0) + 1
    if _passes[name] >= (int(count) if count.isdigit() else 1):
        os.kill(os.getpid(), signal.SIGKILL)
