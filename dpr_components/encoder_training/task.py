"""The bi-encoder's task for the shared training loop (:mod:`dpr_components.runs.loop`): one
optimizer step over ``accumulation_steps`` batches, the log entry of a window, validation with
best-model selection and early stopping, and checkpoints."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dpr_components.encoder_training import distributed
from dpr_components.encoder_training.batching import BatchBuilder
from dpr_components.encoder_training.checkpoints import (
    EncoderTrainingState,
    latest_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from dpr_components.encoder_training.export import export_bi_encoder
from dpr_components.encoder_training.frozen_passages import FrozenPassageVectors
from dpr_components.encoder_training.model import BiEncoder
from dpr_components.encoder_training.settings import EncoderTrainingSettings
from dpr_components.encoder_training.step import backward_batch
from dpr_components.encoder_training.validation import ValidationSet, validate
from dpr_components.runs.finite import NonFiniteScores, apply_update, diverged
from dpr_components.runs.log_window import LogWindow
from dpr_components.runs.loop import LoopTask, ProgressBar, StepOutcome
from dpr_components.runs.process_state import peak_rss_mb, rng_states
from dpr_components.runs.run_log import RunLog

POSTFIX = {"loss": "{loss:.3f}", "ex_s": "{examples_per_s:.1f}", "epoch": "{epoch}"}


def epoch_order(seed: int, epoch: int, n: int) -> np.ndarray:
    """The order of the ``n`` training examples in ``epoch``."""
    return np.random.default_rng([seed, epoch, 1]).permutation(n)


@dataclass
class EncoderObjects:
    """The objects a bi-encoder run trains and validates with."""

    model: BiEncoder
    loss: torch.nn.Module
    batches: BatchBuilder
    optimizer: torch.optim.Optimizer
    scheduler: Any
    frozen_passages: FrozenPassageVectors | None = None  # fixed passage vectors (question-side training)
    validation: ValidationSet | None = None  # on rank 0 of a run with dev examples

    def passage_lookup(self) -> Any:
        return self.frozen_passages.lookup if self.frozen_passages is not None else None


@dataclass(frozen=True)
class EncoderRunShape:
    """The run's size: its output folder, examples, batches and steps, and its process."""

    output_dir: Path
    examples: int
    batches_per_epoch: int
    steps_per_epoch: int
    total_steps: int
    rank: int
    world: int
    validates: bool  # the run has dev examples


class EncoderTask(LoopTask):
    """One bi-encoder run in one process (of ``world``), as the shared loop runs it."""

    fault = "training.step"
    state: EncoderTrainingState

    def __init__(
        self,
        settings: EncoderTrainingSettings,
        shape: EncoderRunShape,
        objects: EncoderObjects,
        state: EncoderTrainingState,
        log: RunLog | None,
        show_progress: bool,
    ) -> None:
        self.settings, self.shape, self.objects, self.state, self.log = settings, shape, objects, state, log
        self.total_steps, self.log_every = shape.total_steps, settings.log_every
        self.looks = ProgressBar("Training", show_progress and shape.rank == 0, smoothing=0.1, postfix=POSTFIX)
        self.window = LogWindow(elapsed_before=state.elapsed_seconds)  # the run replaces it when training starts
        self.order = epoch_order(settings.seed, state.epoch, shape.examples)

    def finished(self) -> bool:
        return self.state.step >= self.total_steps or self.state.stopped_early

    def step(self) -> StepOutcome:
        """One optimizer step; a step whose loss or gradient norm is not finite is skipped (its
        outcome says what was not finite) or stops the run."""
        settings, state, objects = self.settings, self.state, self.objects
        loss, grad_norm = self._backward()
        skipped = apply_update(
            objects.model,
            objects.optimizer,
            objects.scheduler,
            loss,
            grad_norm,
            state.step + 1,
            state.nonfinite_steps,
            settings.max_nonfinite_steps,
            self.last_good_checkpoint,
        )
        state.nonfinite_steps += 0 if skipped is None else 1
        state.step += 1
        examples = settings.batch_size * settings.accumulation_steps
        state.examples_seen += examples
        if skipped is not None and self.log is not None:
            self.log.write({"step": state.step, "epoch": state.epoch, "event": "skipped", "reason": skipped})
        epoch_done = state.batch_in_epoch + settings.accumulation_steps > self.shape.batches_per_epoch
        if epoch_done:
            state.epoch += 1
            state.batch_in_epoch = 0
            self.order = epoch_order(settings.seed, state.epoch, self.shape.examples)
        last = state.step >= self.total_steps
        every = settings.validate_every
        evaluate = self.shape.validates and ((state.step % every == 0 if every else epoch_done) or last)
        checkpoint = state.step % settings.checkpoint_every == 0 or epoch_done or last
        return StepOutcome({"loss": loss, "grad_norm": grad_norm}, skipped, examples, evaluate, checkpoint)

    def _backward(self) -> tuple[float, float]:
        """The loss of the step's batches, their gradients summed over the processes and clipped; and its norm."""
        settings, state, objects = self.settings, self.state, self.objects
        objects.optimizer.zero_grad(set_to_none=True)
        loss = 0.0
        for _ in range(settings.accumulation_steps):
            b = state.batch_in_epoch
            indices = self.order[b * settings.batch_size : (b + 1) * settings.batch_size].tolist()
            batch = objects.batches.build(indices, state.epoch, b, shards=self.shape.world)
            scale = 1.0 / settings.accumulation_steps
            loss += backward_batch(
                objects.model,
                objects.loss,
                batch,
                settings.grad_cache_chunk,
                scale,
                objects.passage_lookup(),
                settings.encode_chunk,
            )
            state.batch_in_epoch += 1
        distributed.sum_gradients(objects.model.parameters())
        grad_norm = float(torch.nn.utils.clip_grad_norm_(objects.model.parameters(), settings.max_grad_norm))
        return loss, grad_norm

    def log_entry(self, window: LogWindow, now: float) -> dict[str, Any]:
        return {
            "step": self.state.step,
            "epoch": self.state.epoch,
            "loss": window.mean("loss"),
            "lr": self.objects.scheduler.get_last_lr()[0],
            "grad_norm": window.last["grad_norm"],
            "examples_per_s": window.rate(window.examples, now),
            "elapsed_s": window.elapsed(now),
            "peak_rss_mb": peak_rss_mb(),
        }

    def last_good_checkpoint(self) -> str:
        """The checkpoint a stopped run keeps, for its error message."""
        found = latest_checkpoint(self.shape.output_dir / "checkpoints")
        return str(found) if found is not None else "none was written before it"

    def evaluate(self) -> bool:
        """Validate on rank 0 (exporting ``best/`` when the selection metric improves) and share the
        outcome with every process; True when the run stops early."""
        state = self.state
        if self.shape.rank == 0 and self.objects.validation is not None:
            metrics = self._metrics()
            improved = self._record_validation(metrics)
            if self.log is not None:
                self.log.write({"step": state.step, "epoch": state.epoch, "validation": metrics, "best": improved})
        fields = ("best_metric", "best_step", "bad_validations", "stopped_early", "last_validation")
        shared = distributed.broadcast_object({name: getattr(state, name) for name in fields})
        for name, value in shared.items():  # type: ignore[attr-defined]
            setattr(state, name, value)
        return state.stopped_early

    def _metrics(self) -> dict[str, float]:
        settings = self.settings
        assert self.objects.validation is not None
        try:
            metrics = validate(
                self.objects.model,
                self.objects.validation,
                score=settings.similarity,
                passage_vectors=self.objects.passage_lookup(),
            )
        except NonFiniteScores as error:
            raise diverged(self.state.step, str(error), self.last_good_checkpoint()) from None
        if settings.selection_metric not in metrics:
            raise ValueError(
                f"selection metric {settings.selection_metric!r} is not computed; metrics are {sorted(metrics)}"
            )
        return metrics

    def _record_validation(self, metrics: dict[str, float]) -> bool:
        """Keep the model in ``best/`` if ``metrics`` improve on the best so far; count patience."""
        settings, state = self.settings, self.state
        value = metrics[settings.selection_metric]
        lower_is_better = settings.selection_metric == "avg_rank"
        improved = state.best_metric is None or (
            value < state.best_metric if lower_is_better else value > state.best_metric
        )
        if improved:
            state.best_metric, state.best_step, state.bad_validations = value, state.step, 0
            export_bi_encoder(
                self.objects.model, self.shape.output_dir / "best", settings.fp16_export, self.training_info(metrics)
            )
        else:
            state.bad_validations += 1
        state.stopped_early = settings.patience is not None and state.bad_validations >= settings.patience
        state.last_validation = metrics
        return improved

    def checkpoint(self) -> None:
        state, objects = self.state, self.objects
        state.elapsed_seconds = self.window.elapsed(time.perf_counter())
        rng = distributed.all_gather_objects(rng_states())
        if self.shape.rank == 0:
            folder = self.shape.output_dir / "checkpoints"
            save_checkpoint(folder, objects.model, objects.optimizer, objects.scheduler, state, rng)  # type: ignore[arg-type]
            prune_checkpoints(folder, self.settings.keep_checkpoints)
        distributed.barrier()

    def training_info(self, metrics: dict[str, float] | None = None) -> dict[str, Any]:
        """What an exported model records of its training."""
        state = self.state
        return {"step": state.step, "epoch": state.epoch, "metrics": metrics, "config": self.settings.to_dict()}
