"""The DPR training loop: in-batch (and shared hard) negatives, AdamW with linear warm-up and
decay, gradient clipping, optional GradCache and DDP, resumable checkpoints, validation with
best-checkpoint selection and early stopping.

Output folder::

    config.json            the TrainingConfig (a resumed run must match it)
    log.jsonl              loss, learning rate, examples/s, validation metrics by step
    checkpoints/step-N/    resumable state (model, optimizer, scheduler, generators, position)
    best/                  best validated model, Hugging Face DPR layout (see export.py)
    final/                 the model at the end of training, same layout
    result.json            summary (paths, steps, metrics, speed)

Run the same call again after a kill and training continues from the newest checkpoint; run
it after completion and it returns the stored result. A step whose loss or gradient norm is NaN
or infinite is skipped (up to ``max_nonfinite_steps``) or stops the run, keeping the last good
checkpoint (``finite.py``); a checkpoint holding such weights is never resumed.

The loop itself (:mod:`dpr_components.runs.loop`) is the reader's too; :class:`Trainer` supplies
its steps, validation, checkpoints and log entries."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from dpr_components.encoders.text_encoder import EncoderSettings
from dpr_components.runs.finite import NonFiniteScores, apply_update, diverged
from dpr_components.runs.loop import LoopTask, ProgressBar, StepOutcome, run_loop
from dpr_components.runs.optimizer import adamw_with_decay_groups
from dpr_components.runs.process_state import peak_rss_mb, rng_states
from dpr_components.runs.rng import seed_everything
from dpr_components.runs.run_folder import (
    check_same_run,
    clean_run_folder,
    data_fingerprint,
    read_settings,
    resume_log,
    write_settings,
)
from dpr_components.runs.run_log import RunLog
from dpr_components.runs.schedule import linear_warmup_decay
from dpr_components.training import distributed
from dpr_components.training.batching import BatchBuilder, BatchSettings
from dpr_components.training.config import RESUMABLE_CHANGES, TrainingConfig
from dpr_components.training.examples import Ctx, TrainingExample, ctx_key
from dpr_components.training.export import export_dpr
from dpr_components.training.frozen_passages import FrozenPassageVectors
from dpr_components.training.losses import build_loss
from dpr_components.training.model import BiEncoder
from dpr_components.training.state import (
    TrainerState,
    latest_checkpoint,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from dpr_components.training.step import backward_batch
from dpr_components.training.validation import (
    ValidationSet,
    build_validation_set,
    validate,
)
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.init_parameters import init_parameters
from dpr_components.utils.output_folders import DPR_RUN, check_output_folder, claim_folder
from dpr_components.utils.settings import cache_dir
from dpr_components.utils.threads import check_thread_count

RESULT_FILE = "result.json"


@dataclass
class TrainingResult:
    """Where the trained encoders are and how training went. ``model_dir`` is the best validated
    model if there was validation, else the final one; it holds ``question_encoder/`` and
    ``passage_encoder/``."""

    output_dir: str
    model_dir: str
    final_dir: str
    best_dir: str | None
    steps: int
    total_steps: int
    stopped_early: bool
    best_metric: float | None
    best_step: int | None
    last_validation: dict[str, float] | None
    examples: int
    examples_per_second: float
    peak_rss_mb: float

    @property
    def question_model(self) -> str:
        return str(Path(self.model_dir) / "question_encoder")

    @property
    def passage_model(self) -> str:
        return str(Path(self.model_dir) / "passage_encoder")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _fingerprint(examples: Sequence[TrainingExample]) -> str:
    return data_fingerprint(
        f"{e.id}\x1f{e.question}\x1f{ctx_key(e.positives[0])}\x1f{len(e.hard_negatives)}\x1e" for e in examples
    )


def epoch_order(seed: int, epoch: int, n: int) -> np.ndarray:
    return np.random.default_rng([seed, epoch, 1]).permutation(n)


@dataclass
class _LogWindow:
    """The steps since the last log entry, and this process's segment of the run (since it started
    or resumed): when it started, the run time before it and the examples it trained on."""

    segment_start: float
    elapsed_before: float
    segment_examples: int = 0
    losses: list[float] = field(default_factory=list)  # of the window's updating steps
    grad_norm: float = 0.0  # of the window's last updating step
    examples: int = 0
    start: float = field(init=False)

    def __post_init__(self) -> None:
        self.start = self.segment_start

    def add(self, examples: int) -> None:
        self.segment_examples += examples
        self.examples += examples

    def speed(self, now: float) -> float:
        """Examples per second in the window."""
        return self.examples / max(now - self.start, 1e-9)

    def elapsed(self, now: float) -> float:
        """Seconds of training in the whole run, resumed segments included."""
        return self.elapsed_before + now - self.segment_start

    def restart(self, now: float) -> None:
        self.losses, self.start, self.examples = [], now, 0


class Trainer(LoopTask):
    """One training run in one process (of ``world_size``); see :func:`train`. It is the shared
    loop's task (:mod:`dpr_components.runs.loop`): it supplies the steps, validation and checkpoints."""

    fault = "training.step"
    state: TrainerState
    log: RunLog | None

    def __init__(
        self,
        config: TrainingConfig,
        examples: Sequence[TrainingExample],
        output_dir: str | Path,
        dev_examples: Sequence[TrainingExample] | None = None,
        corpus: Sequence[Ctx] | None = None,
        show_progress: bool = True,
        on_step: Callable[[TrainerState], None] | None = None,
    ) -> None:
        self.config = config
        self.examples = examples
        self.output_dir = Path(output_dir)
        self.dev_examples = dev_examples
        self.corpus = corpus
        self.show_progress = show_progress
        self.on_step = on_step
        self.rank, self.world = distributed.rank_and_world()
        if config.batch_size % self.world:
            raise ValueError(f"batch_size {config.batch_size} must be a multiple of the {self.world} processes")
        self.batches_per_epoch = len(examples) // config.batch_size
        self.steps_per_epoch = self.batches_per_epoch // config.accumulation_steps
        if self.steps_per_epoch == 0:
            raise ValueError(
                f"{len(examples)} training examples are fewer than one step needs "
                f"(batch_size {config.batch_size} x accumulation_steps {config.accumulation_steps})"
            )
        self.total_steps = config.max_steps or self.steps_per_epoch * config.epochs
        self.log_every = config.log_every

    # ---- setup -------------------------------------------------------------------------

    def _check_output_dir(self, fingerprint: str) -> None:
        check_output_folder(self.output_dir, DPR_RUN, replace=False, hint="choose another folder for the run")
        saved = read_settings(self.output_dir)
        if saved is not None:
            previous = TrainingConfig.from_dict(saved["config"])
            check_same_run(
                self.output_dir,
                previous.to_dict(),
                self.config.to_dict(),
                RESUMABLE_CHANGES,
                saved.get("data"),
                fingerprint,
            )
        if self.rank == 0:
            claim_folder(self.output_dir, DPR_RUN)
            write_settings(
                self.output_dir, {"config": self.config.to_dict(), "data": fingerprint, "examples": len(self.examples)}
            )

    def _build(self) -> None:
        config = self.config
        seed_everything(config.seed + self.rank)
        self.model = BiEncoder.from_pretrained(
            config.model,
            passage_model=config.passage_model,
            tie=config.tie_encoders,
            **init_parameters(config, "pooling normalize max_length dropout bf16"),
        )
        self.frozen_passages: FrozenPassageVectors | None = None
        if not config.train_passage_encoder:
            self._freeze_passage_encoder()
        self.loss = build_loss(config.loss, config.similarity, config.scale, config.margin)  # type: ignore[arg-type]
        self.batches = BatchBuilder(
            self.examples,
            BatchSettings(
                negatives=config.negatives,
                negative_source=config.negative_source,  # type: ignore[arg-type]
                in_batch=config.in_batch,
                mask_answer_hits=config.mask_answer_hits,
            ),
            seed=config.seed,
            random_pool=self.corpus,
        )
        self.optimizer = adamw_with_decay_groups(self.model, config.learning_rate, config.weight_decay, config.adam_eps)
        warmup = config.warmup_steps if config.warmup_steps is not None else int(config.warmup_ratio * self.total_steps)
        self.scheduler = linear_warmup_decay(self.optimizer, warmup, self.total_steps)
        self.validation: ValidationSet | None = None
        if self.dev_examples and self.rank == 0:
            self.validation = build_validation_set(
                self.dev_examples,
                config.val_questions,
                config.val_hard_negatives,
                self.corpus,
                config.val_pool_size,
                seed=config.seed,
            )

    def _freeze_passage_encoder(self) -> None:
        model = self.model
        model.context_model.requires_grad_(False)
        # The vectors the exported passage encoder will make: same pooling, normalisation, length.
        settings = EncoderSettings(
            model=self.config.passage_model or self.config.model,
            pooling=model.pooling,
            normalize=model.normalize,
            max_length=model.max_length,
        )
        vectors = FrozenPassageVectors(
            settings, cache_dir() / "embeddings", show_progress=self.show_progress and self.rank == 0
        )
        vectors.add_examples(self.examples)
        self.frozen_passages = vectors

    # ---- one step (the loop's task) ------------------------------------------------------

    @property
    def steps_done(self) -> int:
        return self.state.step

    def finished(self) -> bool:
        return self.state.step >= self.total_steps or self.state.stopped_early

    def progress_bar(self) -> ProgressBar:
        return ProgressBar("Training", self.show_progress and self.rank == 0, smoothing=0.1)

    def step(self) -> StepOutcome:
        """One optimizer step; a step whose loss or gradient norm is not finite is skipped (its
        outcome says what was not finite) or stops the run."""
        config, state = self.config, self.state
        self.optimizer.zero_grad(set_to_none=True)
        loss = 0.0
        for _ in range(config.accumulation_steps):
            b = state.batch_in_epoch
            indices = self._order[b * config.batch_size : (b + 1) * config.batch_size].tolist()
            batch = self.batches.build(indices, state.epoch, b, shards=self.world)
            scale = 1.0 / config.accumulation_steps
            lookup = self.frozen_passages.lookup if self.frozen_passages is not None else None
            loss += backward_batch(self.model, self.loss, batch, config.grad_cache_chunk, scale, lookup)
            state.batch_in_epoch += 1
        distributed.sum_gradients(self.model.parameters())
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.max_grad_norm))
        skipped = apply_update(
            self.model,
            self.optimizer,
            self.scheduler,
            loss,
            grad_norm,
            state.step + 1,
            state.nonfinite_steps,
            config.max_nonfinite_steps,
            self._last_good_checkpoint,
        )
        state.nonfinite_steps += 0 if skipped is None else 1
        state.step += 1
        state.examples_seen += config.batch_size * config.accumulation_steps
        epoch_done = state.batch_in_epoch + config.accumulation_steps > self.batches_per_epoch
        return StepOutcome(loss, skipped, epoch_done, {"grad_norm": grad_norm})

    def record(self, outcome: StepOutcome, bar: tqdm) -> None:
        config, state, window = self.config, self.state, self._window
        window.add(config.batch_size * config.accumulation_steps)
        if outcome.skipped is None:
            window.losses.append(outcome.loss)
            window.grad_norm = outcome.details["grad_norm"]
        elif self.log is not None:
            self.log.write({"step": state.step, "epoch": state.epoch, "event": "skipped", "reason": outcome.skipped})
        if outcome.epoch_done:
            state.epoch += 1
            state.batch_in_epoch = 0
            self._order = epoch_order(config.seed, state.epoch, len(self.examples))
        bar.set_postfix(loss=f"{outcome.loss:.3f}", ex_s=f"{window.speed(time.perf_counter()):.1f}", epoch=state.epoch)

    def write_log(self, bar: tqdm) -> None:
        state, window = self.state, self._window
        now = time.perf_counter()
        if self.log is not None and window.losses:  # a window of skipped steps only has their events
            self.log.write(
                {
                    "step": state.step,
                    "epoch": state.epoch,
                    "loss": float(np.mean(window.losses)),
                    "lr": self.scheduler.get_last_lr()[0],
                    "grad_norm": window.grad_norm,
                    "examples_per_s": window.speed(now),
                    "elapsed_s": window.elapsed(now),
                    "peak_rss_mb": peak_rss_mb(),
                }
            )
        window.restart(now)

    def evaluation_due(self, outcome: StepOutcome, last: bool) -> bool:
        every = self.config.validate_every
        due = (self.state.step % every == 0) if every else outcome.epoch_done
        return bool(self.dev_examples) and (due or last)

    def evaluate(self) -> None:
        self._validate(self.state, self.log)

    def checkpoint_due(self, outcome: StepOutcome, last: bool) -> bool:
        return (
            self.state.step % self.config.checkpoint_every == 0
            or outcome.epoch_done
            or last
            or self.state.stopped_early
        )

    def after_step(self) -> None:
        if self.on_step is not None:
            self.on_step(self.state)

    def _last_good_checkpoint(self) -> str:
        found = latest_checkpoint(self.output_dir / "checkpoints")
        return str(found) if found is not None else "none was written before it"

    # ---- validation, checkpoints -------------------------------------------------------

    def _validate(self, state: TrainerState, log: RunLog | None) -> None:
        config = self.config
        if self.rank == 0 and self.validation is not None:
            lookup = self.frozen_passages.lookup if self.frozen_passages is not None else None
            try:
                metrics = validate(self.model, self.validation, score=config.similarity, passage_vectors=lookup)
            except NonFiniteScores as error:
                raise diverged(state.step, str(error), self._last_good_checkpoint()) from None
            name = config.selection_metric
            if name not in metrics:
                raise ValueError(f"selection metric {name!r} is not computed; metrics are {sorted(metrics)}")
            value = metrics[name]
            lower_is_better = name == "avg_rank"
            improved = state.best_metric is None or (
                value < state.best_metric if lower_is_better else value > state.best_metric
            )
            if improved:
                state.best_metric, state.best_step, state.bad_validations = value, state.step, 0
                export_dpr(self.model, self.output_dir / "best", config.fp16_export, self._metadata(state, metrics))
            else:
                state.bad_validations += 1
            state.stopped_early = config.patience is not None and state.bad_validations >= config.patience
            state.last_validation = metrics
            if log is not None:
                log.write({"step": state.step, "epoch": state.epoch, "validation": metrics, "best": improved})
        fields = ("best_metric", "best_step", "bad_validations", "stopped_early", "last_validation")
        shared = distributed.broadcast_object({name: getattr(state, name) for name in fields})
        for name, value in shared.items():  # type: ignore[attr-defined]
            setattr(state, name, value)

    def checkpoint(self) -> None:
        state = self.state
        state.elapsed_seconds = self._window.elapsed(time.perf_counter())
        rng = distributed.all_gather_objects(rng_states())
        if self.rank == 0:
            folder = self.output_dir / "checkpoints"
            save_checkpoint(folder, self.model, self.optimizer, self.scheduler, state, rng)  # type: ignore[arg-type]
            prune_checkpoints(folder, self.config.keep_checkpoints)
        distributed.barrier()

    def _metadata(self, state: TrainerState, metrics: dict[str, float] | None = None) -> dict[str, Any]:
        return {"step": state.step, "epoch": state.epoch, "metrics": metrics, "config": self.config.to_dict()}

    # ---- the run -----------------------------------------------------------------------

    def run(self) -> TrainingResult:
        result_path = self.output_dir / RESULT_FILE
        self._check_output_dir(_fingerprint(self.examples))
        if self.rank == 0:
            clean_run_folder(self.output_dir, "checkpoints")
        distributed.barrier()
        self._build()
        self.state = TrainerState()
        resumed = latest_checkpoint(self.output_dir / "checkpoints")
        if resumed is not None:
            self.state = load_checkpoint(resumed, self.model, self.optimizer, self.scheduler, self.rank)
        state = self.state
        if state.step >= self.total_steps or state.stopped_early:
            if result_path.exists():
                return TrainingResult(**json.loads(result_path.read_text(encoding="utf-8")))
        self._start_log(state.step if resumed is not None else None)
        if resumed is None and self.dev_examples and self.config.validate_at_start:
            # The starting model competes for "best": fine-tuning a strong retriever can also hurt.
            self._validate(state, self.log)
        self.model.train()
        self._window = _LogWindow(time.perf_counter(), state.elapsed_seconds)
        self._order = epoch_order(self.config.seed, state.epoch, len(self.examples))
        run_loop(self)
        segment_seconds = time.perf_counter() - self._window.segment_start
        state.elapsed_seconds = self._window.elapsed_before + segment_seconds
        examples = self._window.segment_examples
        return self._finish(state, examples / segment_seconds if examples else 0.0)

    def _start_log(self, resumed_step: int | None) -> None:
        """Open the log on rank 0 (cut back to a resumed checkpoint's step); a new run's starts."""
        self.log = resume_log(self.output_dir, resumed_step) if self.rank == 0 else None
        if self.log is not None and resumed_step is None:
            self.log.write(
                {
                    "step": 0,
                    "event": "start",
                    "examples": len(self.examples),
                    "total_steps": self.total_steps,
                    "steps_per_epoch": self.steps_per_epoch,
                    "processes": self.world,
                }
            )

    def _finish(self, state: TrainerState, speed: float) -> TrainingResult:
        final_dir = self.output_dir / "final"
        best_dir = self.output_dir / "best" if state.best_step is not None else None
        result = TrainingResult(
            output_dir=str(self.output_dir),
            model_dir=str(best_dir or final_dir),
            final_dir=str(final_dir),
            best_dir=str(best_dir) if best_dir else None,
            steps=state.step,
            total_steps=self.total_steps,
            stopped_early=state.stopped_early,
            best_metric=state.best_metric,
            best_step=state.best_step,
            last_validation=state.last_validation,
            examples=len(self.examples),
            examples_per_second=speed,
            peak_rss_mb=peak_rss_mb(),
        )
        if self.rank == 0:
            export_dpr(self.model, final_dir, self.config.fp16_export, self._metadata(state, state.last_validation))
            atomic_write_text(self.output_dir / RESULT_FILE, json.dumps(result.to_dict(), indent=1))
        distributed.barrier()
        return result


def train(
    config: TrainingConfig,
    examples: Sequence[TrainingExample],
    output_dir: str | Path,
    dev_examples: Sequence[TrainingExample] | None = None,
    corpus: Sequence[Ctx] | None = None,
    **options: Any,
) -> TrainingResult:
    """Train a DPR bi-encoder on ``examples`` into ``output_dir`` (resuming a run found there).

    ``dev_examples`` enable validation and best-model selection; ``corpus`` passages are the
    random-negative pool and the sampled validation pool; ``options`` (``show_progress``, ``on_step``)
    are :class:`Trainer`'s. In a DDP process group every process
    calls this with the same arguments."""
    if config.threads:
        torch.set_num_threads(check_thread_count("training setting 'threads'", config.threads))
    return Trainer(config, examples, output_dir, dev_examples, corpus, **options).run()
