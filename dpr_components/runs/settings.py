"""What the settings of both trainers share: the fields every run has (batches, schedule, optimiser,
cadence, the budget of non-finite steps) and the checks of their values, each refusal in one format,
``<label> '<name>' must be <rule>, got <value>`` (the label names the trainer's settings).

:class:`~dpr_components.encoder_training.settings.EncoderTrainingSettings` and
:class:`~dpr_components.reader_training.settings.ReaderTrainingSettings` build on
:class:`TrainingSettings`, giving the shared fields their own defaults and adding their own."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, ClassVar, NoReturn, TypeVar

from dpr_components.runs.setting_types import check_setting_types
from dpr_components.utils.validation import short_repr

# Shared settings that may change when a run is resumed (they do not change what is computed).
RESUMABLE_CHANGES = frozenset({"checkpoint_every", "log_every", "max_nonfinite_steps"})

Settings = TypeVar("Settings", bound="TrainingSettings")


def _number(value: Any) -> bool:
    """A finite int or float (booleans are not numbers here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(kw_only=True)
class TrainingSettings:
    """The settings of every training run; each trainer's settings class gives the fields without a
    default here their defaults. ``max_steps`` stops earlier than ``epochs``; ``max_nonfinite_steps``:
    steps whose loss or gradient norm is NaN or infinite that are skipped before the run stops."""

    LABEL: ClassVar[str] = "training setting"

    batch_size: int
    epochs: int
    max_steps: int | None = None
    learning_rate: float
    warmup_ratio: float = 0.1
    weight_decay: float
    max_grad_norm: float = 2.0
    max_length: int
    bf16: bool = False
    seed: int
    checkpoint_every: int = 200
    log_every: int = 10
    max_nonfinite_steps: int = 0

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check every value: the types of all fields, then the shared fields' ranges (a trainer's
        class checks its own fields after these)."""
        check_setting_types(self, self.LABEL)
        self.check_ints("batch_size", "epochs", "max_length", "checkpoint_every", "log_every")
        self.check_ints("max_steps", optional=True)
        self.check_ints("seed", "max_nonfinite_steps", smallest=0)
        self.check_positive("learning_rate", "max_grad_norm")
        self.check_at_least_zero("weight_decay")
        self.check_fraction("warmup_ratio")

    def refuse(self, name: str, rule: str) -> NoReturn:
        """Raise the ``ValueError`` saying that setting ``name`` must be ``rule``."""
        raise ValueError(f"{self.LABEL} {name!r} must be {rule}, got {short_repr(getattr(self, name))}")

    def check_ints(self, *names: str, smallest: int = 1, optional: bool = False) -> None:
        """Each of ``names`` is an integer >= ``smallest`` (or None when ``optional``)."""
        rule = ("a positive integer" if smallest == 1 else f"an integer >= {smallest}") + (
            " or null" if optional else ""
        )
        for name in names:
            value = getattr(self, name)
            if optional and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < smallest:
                self.refuse(name, rule)

    def check_positive(self, *names: str) -> None:
        """Each of ``names`` is a finite number > 0 (None is left to the type check)."""
        for name in names:
            value = getattr(self, name)
            if value is not None and not (_number(value) and value > 0):
                self.refuse(name, "a positive number")

    def check_at_least_zero(self, *names: str) -> None:
        """Each of ``names`` is a finite number >= 0."""
        for name in names:
            value = getattr(self, name)
            if not (_number(value) and value >= 0):
                self.refuse(name, "a number >= 0")

    def check_fraction(self, *names: str) -> None:
        """Each of ``names`` is a probability-like fraction in [0, 1) (None is left to the type check)."""
        for name in names:
            value = getattr(self, name)
            if value is not None and not (_number(value) and 0 <= value < 1):
                self.refuse(name, "a number in [0, 1)")

    def check_choice(self, name: str, options: Collection[str]) -> None:
        """Setting ``name`` is one of ``options``."""
        if getattr(self, name) not in options:
            self.refuse(name, "one of " + ", ".join(repr(option) for option in options))

    def to_dict(self) -> dict[str, Any]:
        """The settings as a run folder saves them (``config.json``)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls: type[Settings], data: dict[str, Any]) -> Settings:
        """Settings from :meth:`to_dict`'s mapping; unknown names are refused."""
        if not isinstance(data, dict):
            raise ValueError(f"{cls.LABEL}s must be a mapping of setting names to values, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown {cls.LABEL}s {unknown}; known settings are {sorted(known)}")
        return cls(**data)
