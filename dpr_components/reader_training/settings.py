"""Every setting of a reader training run, validated."""

from __future__ import annotations

from dataclasses import dataclass

from dpr_components.encoders.text_encoder import BUNDLED_MINILM
from dpr_components.reader_training.loss import Objective
from dpr_components.readers.inputs import InputSettings
from dpr_components.runs.setting_types import check_setting_types

# Settings that may change between an interrupted run and its resumption.
RESUMABLE_CHANGES = frozenset(
    {
        "output_dir",
        "eval_every",
        "checkpoint_every",
        "log_every",
        "dev_limit",
        "progress",
        "export",
        "max_nonfinite_steps",
    }
)
_POSITIVE = (
    "passages_per_question",
    "batch_size",
    "epochs",
    "log_every",
    "checkpoint_every",
    "dev_passages",
    "max_answer_length",
)


@dataclass
class ReaderTrainingSettings:
    """Reader training settings (defaults sized for a CPU; DPR's GPU runs used m=24)."""

    output_dir: str
    init_model: str = BUNDLED_MINILM
    passages_per_question: int = 4  # m: one positive and m−1 negatives
    batch_size: int = 4  # questions per optimizer step
    epochs: int = 1
    max_steps: int | None = None  # stop earlier than ``epochs``
    learning_rate: float = 5e-5
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    max_grad_norm: float = 2.0
    max_length: int = 192
    stride: int = 64
    max_question_tokens: int = 64
    max_title_tokens: int = 32
    max_answer_length: int = 10
    bf16: bool = False  # bf16 autocast for forward and backward
    seed: int = 0
    eval_every: int = 1000  # steps; 0 evaluates only at the end
    checkpoint_every: int = 200
    log_every: int = 10
    dev_passages: int = 8
    dev_limit: int | None = None
    progress: bool = True
    export: str = "best"  # which reader export/ holds: "best" by dev EM, or the "last" step's
    max_nonfinite_steps: int = 0  # steps with a NaN or infinite loss or gradient norm skipped before stopping
    objective: Objective = "reader"  # "selection": the selection loss alone (a ranker; the span head stays untrained)

    def __post_init__(self) -> None:
        check_setting_types(self, "reader training setting")
        for name in _POSITIVE:
            if getattr(self, name) <= 0:
                raise ValueError(f"reader training setting {name!r} must be positive, got {getattr(self, name)}")
        if self.max_nonfinite_steps < 0:
            raise ValueError(
                f"reader training setting 'max_nonfinite_steps' must be >= 0, got {self.max_nonfinite_steps}"
            )
        if self.max_steps is not None and self.max_steps <= 0:
            raise ValueError(f"reader training setting 'max_steps' must be positive, got {self.max_steps}")
        if self.eval_every < 0:
            raise ValueError(f"reader training setting 'eval_every' must be 0 or positive, got {self.eval_every}")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"reader training setting 'warmup_ratio' must be in [0, 1), got {self.warmup_ratio}")
        for name in ("learning_rate", "max_grad_norm"):
            if getattr(self, name) <= 0:
                raise ValueError(f"reader training setting {name!r} must be positive, got {getattr(self, name)}")
        for name in ("weight_decay", "seed"):
            if getattr(self, name) < 0:
                raise ValueError(f"reader training setting {name!r} must be >= 0, got {getattr(self, name)}")
        if self.export not in ("best", "last"):
            raise ValueError(f"reader training setting 'export' must be 'best' or 'last', got {self.export!r}")
        self.input_settings()  # validates the lengths

    def input_settings(self) -> InputSettings:
        return InputSettings(self.max_length, self.stride, self.max_question_tokens, self.max_title_tokens)


def total_steps(settings: ReaderTrainingSettings, n_questions: int) -> int:
    """Optimizer steps of a run on ``n_questions`` (the last batch of an epoch may be short)."""
    per_epoch = -(-n_questions // settings.batch_size)
    return min(settings.max_steps or per_epoch * settings.epochs, per_epoch * settings.epochs)
