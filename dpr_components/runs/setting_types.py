"""Check every field of a settings dataclass against its type hint.

Settings arrive from YAML, JSON files and ``--set NAME=VALUE`` flags, where ``"fast"`` for a
learning rate or ``3.5`` for a batch size is easy to write; checked here, each becomes an error
naming the setting instead of a failure deep inside torch (or a silently odd run)."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from dpr_components.utils.type_checks import type_mismatch


def check_setting_types(settings: Any, what: str) -> None:
    """Raise ``ValueError`` naming the first field of the dataclass ``settings`` whose value does
    not fit its type hint (floats must be finite numbers; booleans are not integers), as
    ``<what> '<name>' must be <type>, got <value>`` (the format of :mod:`dpr_components.runs.settings`)."""
    hints = typing.get_type_hints(type(settings))
    for field in dataclasses.fields(settings):
        problem = type_mismatch(getattr(settings, field.name), hints[field.name])
        if problem:
            raise ValueError(f"{what} {field.name!r} must be {problem.removeprefix('expected ')}")
