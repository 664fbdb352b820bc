"""The two trainers are laid out alike: one module per shared role, in both packages; the files both read are
one package of their own, ``dpr_data``, which the reader's ``data`` (its mined passages) builds on."""

from __future__ import annotations

import pytest

from tests.helpers.paths import REPO

PACKAGE = REPO / "dpr_components"
SHARED_ROLES = ("settings", "model", "task", "checkpoints", "export", "train", "model_card")


def _modules(package: str) -> set[str]:
    return {path.stem if path.is_file() else path.name for path in (PACKAGE / package).iterdir()}


def test_both_trainers_have_a_module_for_each_shared_role() -> None:
    for package in ("encoder_training", "reader_training"):
        missing = [role for role in SHARED_ROLES if role not in _modules(package)]
        assert missing == [], f"{package} lacks {missing}"
    assert {"loss", "losses"} & _modules("encoder_training") and {"loss", "losses"} & _modules("reader_training")
    assert {"loading", "examples", "records", "squad", "selection_split"} <= _modules("dpr_data")


def test_both_tasks_and_states_share_the_loop_names() -> None:
    from dpr_components.encoder_training.checkpoints import EncoderTrainingState
    from dpr_components.encoder_training.task import EncoderTask
    from dpr_components.reader_training.checkpoints import ReaderTrainingState
    from dpr_components.reader_training.task import ReaderTask
    from dpr_components.runs.loop import LoopTask
    from dpr_components.runs.state import TrainingState

    assert issubclass(EncoderTask, LoopTask) and issubclass(ReaderTask, LoopTask)
    assert issubclass(EncoderTrainingState, TrainingState) and issubclass(ReaderTrainingState, TrainingState)


def test_both_settings_and_results_build_on_the_shared_ones() -> None:
    from dpr_components.encoder_training.settings import EncoderTrainingSettings
    from dpr_components.encoder_training.train import EncoderTrainingResult
    from dpr_components.reader_training.settings import ReaderTrainingSettings
    from dpr_components.reader_training.train import ReaderTrainingResult
    from dpr_components.runs.result import TrainingResult
    from dpr_components.runs.settings import TrainingSettings

    assert issubclass(EncoderTrainingSettings, TrainingSettings) and issubclass(
        ReaderTrainingSettings, TrainingSettings
    )
    assert issubclass(EncoderTrainingResult, TrainingResult) and issubclass(ReaderTrainingResult, TrainingResult)


def test_both_settings_refuse_a_value_in_one_format() -> None:
    from dpr_components.encoder_training.settings import EncoderTrainingSettings
    from dpr_components.reader_training.settings import ReaderTrainingSettings

    with pytest.raises(ValueError, match=r"^training setting 'batch_size' must be a positive integer, got 0$"):
        EncoderTrainingSettings(batch_size=0)
    with pytest.raises(ValueError, match=r"^reader training setting 'batch_size' must be a positive integer, got 0$"):
        ReaderTrainingSettings(output_dir="run", batch_size=0)
    with pytest.raises(ValueError, match=r"^reader training setting 'learning_rate' must be a finite number, got 'x'$"):
        ReaderTrainingSettings(output_dir="run", learning_rate="x")  # type: ignore[arg-type]
