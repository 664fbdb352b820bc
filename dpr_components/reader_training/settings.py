"""Every setting of a reader training run, validated."""

from __future__ import annotations

from dataclasses import dataclass

from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.reader_training.loss import Objective
from dpr_components.readers.inputs import InputSettings
from dpr_components.runs import settings as shared
from dpr_components.runs.settings import TrainingSettings

# Settings that may change between an interrupted run and its resumption.
RESUMABLE_CHANGES = shared.RESUMABLE_CHANGES | {"output_dir", "eval_every", "dev_limit", "progress", "export"}


@dataclass(kw_only=True)
class ReaderTrainingSettings(TrainingSettings):
    """Reader training settings (defaults sized for a CPU; DPR's GPU runs used m=24); the shared ones
    are :class:`~dpr_components.runs.settings.TrainingSettings`'."""

    LABEL = "reader training setting"

    output_dir: str
    init_model: str = BUNDLED_MINILM
    passages_per_question: int = 4  # m: one positive and m−1 negatives
    batch_size: int = 4  # questions per optimizer step
    epochs: int = 1
    learning_rate: float = 5e-5
    weight_decay: float = 0.01
    max_length: int = 192
    stride: int = 64
    max_question_tokens: int = 64
    max_title_tokens: int = 32
    max_answer_length: int = 10
    seed: int = 0
    eval_every: int = 1000  # steps; 0 evaluates only at the end
    dev_passages: int = 8
    dev_limit: int | None = None
    progress: bool = True
    export: str = "best"  # which reader export/ holds: "best" by dev EM, or the "last" step's
    objective: Objective = "reader"  # "selection": the selection loss alone (a ranker; the span head stays untrained)

    def validate(self) -> None:
        super().validate()
        self.check_ints("passages_per_question", "dev_passages", "max_answer_length")
        self.check_ints("eval_every", smallest=0)
        self.check_choice("export", ("best", "last"))
        self.input_settings()  # validates the lengths

    def input_settings(self) -> InputSettings:
        return InputSettings(self.max_length, self.stride, self.max_question_tokens, self.max_title_tokens)


def total_steps(settings: ReaderTrainingSettings, n_questions: int) -> int:
    """Optimizer steps of a run on ``n_questions`` (the last batch of an epoch may be short)."""
    per_epoch = -(-n_questions // settings.batch_size)
    return min(settings.max_steps or per_epoch * settings.epochs, per_epoch * settings.epochs)
