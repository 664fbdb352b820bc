"""Non-finite training steps (training/finite.py), and exports and settings around them."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch

from dpr_components.encoder_training.export import export_bi_encoder
from dpr_components.encoder_training.model import BiEncoder
from dpr_components.encoder_training.settings import RESUMABLE_CHANGES, EncoderTrainingSettings
from dpr_components.encoders.model_files import ModelFileError
from dpr_components.runs.finite import TrainingDiverged, apply_update
from dpr_components.runs.schedule import linear_warmup_decay

NAN = float("nan")


def _setup(
    learning_rate: float = 0.1,
) -> tuple[torch.nn.Module, torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    model(torch.ones(1, 3)).sum().backward()
    return model, optimizer, linear_warmup_decay(optimizer, 0, 10)


def _update(model, optimizer, scheduler, loss: float = 1.0, grad_norm: float = 1.0, skipped: int = 0, budget: int = 0):  # type: ignore[no-untyped-def]
    return apply_update(model, optimizer, scheduler, loss, grad_norm, 7, skipped, budget, lambda: "runs/x/step-6")


def test_a_finite_step_updates_the_weights() -> None:
    model, optimizer, scheduler = _setup()
    before = model.weight.detach().clone()
    assert _update(model, optimizer, scheduler) is None
    assert not torch.equal(before, model.weight) and scheduler.last_epoch == 1


@pytest.mark.parametrize(
    "loss, grad_norm, problem", [(NAN, 1.0, "the loss is nan"), (1.0, float("inf"), "the gradient norm is inf")]
)
def test_a_non_finite_step_within_the_budget_is_skipped(loss: float, grad_norm: float, problem: str) -> None:
    model, optimizer, scheduler = _setup()
    before = model.weight.detach().clone()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch's warning about the schedule stepping first is not shown
        assert _update(model, optimizer, scheduler, loss, grad_norm, skipped=1, budget=2) == problem
    assert torch.equal(before, model.weight) and model.weight.grad is None
    assert scheduler.last_epoch == 1  # the step counts: the schedule and the data position move on


def test_a_non_finite_step_beyond_the_budget_stops_training() -> None:
    model, optimizer, scheduler = _setup()
    before = model.weight.detach().clone()
    with pytest.raises(
        TrainingDiverged,
        match=r"^training stopped at step 7: the loss is nan .*"
        r"the 2 skipped step\(s\) allowed are used up.*kept: runs/x/step-6\..*--skip-nonfinite-steps",
    ):
        _update(model, optimizer, scheduler, NAN, NAN, skipped=2, budget=2)
    assert torch.equal(before, model.weight)


def test_weights_made_non_finite_by_an_update_stop_training() -> None:
    class Overflowing(torch.optim.SGD):
        def step(self, closure=None):  # type: ignore[no-untyped-def]
            super().step(closure)
            self.param_groups[0]["params"][1].data.fill_(float("inf"))

    model, _, _ = _setup()
    optimizer = Overflowing(model.parameters(), lr=0.1)
    with pytest.raises(TrainingDiverged, match=r"step 7: its update made the weights NaN or infinite \(tensor bias\)"):
        _update(model, optimizer, linear_warmup_decay(optimizer, 0, 10))


def test_an_update_overflowing_float32_stops_training() -> None:
    model, optimizer, scheduler = _setup(learning_rate=1e39)
    with pytest.raises(TrainingDiverged, match="step 7: its update overflows float32"):
        _update(model, optimizer, scheduler)


def test_skip_budget_setting() -> None:
    assert EncoderTrainingSettings(max_nonfinite_steps=3).max_nonfinite_steps == 3
    assert "max_nonfinite_steps" in RESUMABLE_CHANGES  # a stopped run is resumed with a budget
    for value in (-1, 1.5, True):
        with pytest.raises(ValueError, match="max_nonfinite_steps"):
            EncoderTrainingSettings(max_nonfinite_steps=value)


@pytest.mark.parametrize("value, fp16", [(NAN, False), (1e6, True)], ids=["NaN weight", "beyond float16"])
def test_export_refuses_non_finite_weights(tiny_bert_dir: Path, tmp_path: Path, value: float, fp16: bool) -> None:
    model = BiEncoder.from_pretrained(str(tiny_bert_dir), max_length=32)
    with torch.no_grad():
        model.context_model.ctx_encoder.bert_model.embeddings.LayerNorm.bias[0] = value
    out = tmp_path / "export"
    with pytest.raises(
        ModelFileError, match=rf"not saved to {out}: its tensor \S*embeddings.LayerNorm.bias holds NaN or infinite"
    ):
        export_bi_encoder(model, out, fp16=fp16)
    assert not out.exists()
    if fp16:  # in float32 the same weights are finite
        assert export_bi_encoder(model, out).is_dir()
