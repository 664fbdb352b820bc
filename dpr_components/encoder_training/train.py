"""Train a DPR bi-encoder: in-batch (and shared hard) negatives, AdamW with linear warm-up and
decay, gradient clipping, optional GradCache and DDP, resumable checkpoints, validation with
best-checkpoint selection and early stopping.

Output folder::

    config.json            the EncoderTrainingSettings (a resumed run must match them)
    log.jsonl              loss, learning rate, examples/s, validation metrics by step
    checkpoints/step-N/    resumable state (model, optimizer, scheduler, generators, position)
    best/                  best validated model, Hugging Face DPR layout (see export.py)
    final/                 the model at the end of training, same layout
    result.json            summary (paths, steps, metrics, speed)

Run the same call again after a kill and training continues from the newest checkpoint; run
it after completion and it returns the stored result. A step whose loss or gradient norm is NaN
or infinite is skipped (up to ``max_nonfinite_steps``) or stops the run, keeping the last good
checkpoint (``runs/finite.py``); a checkpoint holding such weights is never resumed.

The loop itself (:mod:`dpr_components.runs.loop`) is the reader's too; this module sets a run up
and :class:`~dpr_components.encoder_training.task.EncoderTask` supplies its steps."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from dpr_components.dpr_data.examples import Ctx, TrainingExample, ctx_key
from dpr_components.encoder_training import distributed
from dpr_components.encoder_training.batching import BatchBuilder, BatchSettings
from dpr_components.encoder_training.checkpoints import EncoderTrainingState, latest_checkpoint, load_checkpoint
from dpr_components.encoder_training.export import export_bi_encoder
from dpr_components.encoder_training.frozen_passages import FrozenPassageVectors
from dpr_components.encoder_training.losses import build_loss
from dpr_components.encoder_training.model import BiEncoder
from dpr_components.encoder_training.settings import RESUMABLE_CHANGES, EncoderTrainingSettings
from dpr_components.encoder_training.task import EncoderObjects, EncoderRunShape, EncoderTask
from dpr_components.encoder_training.validation import ValidationSet, build_validation_set
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.runs.log_window import LogWindow
from dpr_components.runs.loop import run_loop
from dpr_components.runs.optimizer import adamw_with_decay_groups
from dpr_components.runs.process_state import peak_rss_mb
from dpr_components.runs.result import TrainingResult
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
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.init_parameters import init_parameters
from dpr_components.utils.output_folders import DPR_RUN, check_output_folder, claim_folder
from dpr_components.utils.settings import cache_dir
from dpr_components.utils.threads import check_thread_count

RESULT_FILE = "result.json"


@dataclass(kw_only=True)
class EncoderTrainingResult(TrainingResult):
    """Where the trained encoders are and how training went (``result.json``). ``model_dir`` is the
    best validated model if there was validation, else the final one; it holds ``question_encoder/``
    and ``passage_encoder/``."""

    model_dir: str
    final_dir: str
    best_dir: str | None
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


def _fingerprint(examples: Sequence[TrainingExample]) -> str:
    return data_fingerprint(
        f"{e.id}\x1f{e.question}\x1f{ctx_key(e.positives[0])}\x1f{len(e.hard_negatives)}\x1e" for e in examples
    )


def run_shape(settings: EncoderTrainingSettings, examples: int, output_dir: Path, validates: bool) -> EncoderRunShape:
    """The size of a run on ``examples`` in this process, checked to give at least one step."""
    rank, world = distributed.rank_and_world()
    if settings.batch_size % world:
        raise ValueError(f"batch_size {settings.batch_size} must be a multiple of the {world} processes")
    batches_per_epoch = examples // settings.batch_size
    steps_per_epoch = batches_per_epoch // settings.accumulation_steps
    if steps_per_epoch == 0:
        raise ValueError(
            f"{examples} training examples are fewer than one step needs "
            f"(batch_size {settings.batch_size} x accumulation_steps {settings.accumulation_steps})"
        )
    total = settings.max_steps or steps_per_epoch * settings.epochs
    return EncoderRunShape(output_dir, examples, batches_per_epoch, steps_per_epoch, total, rank, world, validates)


class EncoderRun:
    """One training run in one process: checks and claims the run folder, builds the training
    objects, resumes the newest checkpoint, runs the loop and exports; see :func:`train`."""

    def __init__(
        self,
        settings: EncoderTrainingSettings,
        examples: Sequence[TrainingExample],
        output_dir: str | Path,
        dev_examples: Sequence[TrainingExample] | None = None,
        corpus: Sequence[Ctx] | None = None,
        show_progress: bool = True,
        on_step: Callable[[EncoderTrainingState], None] | None = None,
    ) -> None:
        self.settings, self.examples, self.dev_examples, self.corpus = settings, examples, dev_examples, corpus
        self.show_progress, self.on_step = show_progress, on_step
        self.shape = run_shape(settings, len(examples), Path(output_dir), bool(dev_examples))
        self.output_dir = self.shape.output_dir

    def _check_output_dir(self, fingerprint: str) -> None:
        check_output_folder(self.output_dir, DPR_RUN, replace=False, hint="choose another folder for the run")
        saved = read_settings(self.output_dir)
        if saved is not None:
            previous = EncoderTrainingSettings.from_dict(saved["config"])
            check_same_run(
                self.output_dir,
                previous.to_dict(),
                self.settings.to_dict(),
                RESUMABLE_CHANGES,
                saved.get("data"),
                fingerprint,
            )
        if self.shape.rank == 0:
            claim_folder(self.output_dir, DPR_RUN)
            write_settings(
                self.output_dir,
                {"config": self.settings.to_dict(), "data": fingerprint, "examples": len(self.examples)},
            )

    def _build(self) -> EncoderObjects:
        settings = self.settings
        seed_everything(settings.seed + self.shape.rank)
        model = BiEncoder.from_pretrained(
            settings.model,
            passage_model=settings.passage_model,
            tie=settings.tie_encoders,
            **init_parameters(settings, "pooling normalize max_length dropout bf16"),
        )
        frozen = None if settings.train_passage_encoder else self._freeze_passage_encoder(model)
        loss = build_loss(settings.loss, settings.similarity, settings.scale, settings.margin)  # type: ignore[arg-type]
        batches = BatchBuilder(
            self.examples,
            BatchSettings(
                negatives=settings.negatives,
                negative_source=settings.negative_source,  # type: ignore[arg-type]
                in_batch=settings.in_batch,
                mask_answer_hits=settings.mask_answer_hits,
            ),
            seed=settings.seed,
            random_pool=self.corpus,
        )
        optimizer = adamw_with_decay_groups(model, settings.learning_rate, settings.weight_decay, settings.adam_eps)
        total = self.shape.total_steps
        warmup = settings.warmup_steps if settings.warmup_steps is not None else int(settings.warmup_ratio * total)
        scheduler = linear_warmup_decay(optimizer, warmup, total)
        return EncoderObjects(model, loss, batches, optimizer, scheduler, frozen, self._validation_set())

    def _validation_set(self) -> ValidationSet | None:
        settings = self.settings
        if not self.dev_examples or self.shape.rank != 0:
            return None
        return build_validation_set(
            self.dev_examples,
            settings.val_questions,
            settings.val_hard_negatives,
            self.corpus,
            settings.val_pool_size,
            seed=settings.seed,
        )

    def _freeze_passage_encoder(self, model: BiEncoder) -> FrozenPassageVectors:
        model.context_model.requires_grad_(False)
        # The vectors the exported passage encoder will make: same pooling, normalisation, length.
        encoder = EncoderSettings(
            model=self.settings.passage_model or self.settings.model,
            pooling=model.pooling,
            normalize=model.normalize,
            max_length=model.max_length,
        )
        vectors = FrozenPassageVectors(
            encoder, cache_dir() / "embeddings", show_progress=self.show_progress and self.shape.rank == 0
        )
        vectors.add_examples(self.examples)
        return vectors

    def run(self) -> EncoderTrainingResult:
        result_path = self.output_dir / RESULT_FILE
        self._check_output_dir(_fingerprint(self.examples))
        if self.shape.rank == 0:
            clean_run_folder(self.output_dir, "checkpoints")
        distributed.barrier()
        objects = self._build()
        state = EncoderTrainingState()
        resumed = latest_checkpoint(self.output_dir / "checkpoints")
        if resumed is not None:
            state = load_checkpoint(resumed, objects.model, objects.optimizer, objects.scheduler, self.shape.rank)
        if (state.step >= self.shape.total_steps or state.stopped_early) and result_path.exists():
            return EncoderTrainingResult(**json.loads(result_path.read_text(encoding="utf-8")))
        log = self._start_log(state.step if resumed is not None else None)
        task = EncoderTask(self.settings, self.shape, objects, state, log, self.show_progress)
        if resumed is None and self.dev_examples and self.settings.validate_at_start:
            # The starting model competes for "best": fine-tuning a strong retriever can also hurt.
            task.evaluate()
        objects.model.train()
        task.window = LogWindow(elapsed_before=state.elapsed_seconds)  # the segment counts training only
        run_loop(task, self.on_step)  # type: ignore[arg-type]
        now = time.perf_counter()
        state.elapsed_seconds = task.window.elapsed(now)
        return self._finish(task, task.window.segment_speed(now))

    def _start_log(self, resumed_step: int | None) -> RunLog | None:
        """Open the log on rank 0 (cut back to a resumed checkpoint's step); a new run's starts."""
        log = resume_log(self.output_dir, resumed_step) if self.shape.rank == 0 else None
        if log is not None and resumed_step is None:
            log.write(
                {
                    "step": 0,
                    "event": "start",
                    "examples": len(self.examples),
                    "total_steps": self.shape.total_steps,
                    "steps_per_epoch": self.shape.steps_per_epoch,
                    "processes": self.shape.world,
                }
            )
        return log

    def _finish(self, task: EncoderTask, speed: float) -> EncoderTrainingResult:
        state = task.state
        final_dir = self.output_dir / "final"
        best_dir = self.output_dir / "best" if state.best_step is not None else None
        result = EncoderTrainingResult(
            output_dir=str(self.output_dir),
            model_dir=str(best_dir or final_dir),
            final_dir=str(final_dir),
            best_dir=str(best_dir) if best_dir else None,
            steps=state.step,
            total_steps=self.shape.total_steps,
            stopped_early=state.stopped_early,
            best_metric=state.best_metric,
            best_step=state.best_step,
            last_validation=state.last_validation,
            examples=len(self.examples),
            examples_per_second=speed,
            peak_rss_mb=peak_rss_mb(),
        )
        if self.shape.rank == 0:
            export_bi_encoder(
                task.objects.model, final_dir, self.settings.fp16_export, task.training_info(state.last_validation)
            )
            atomic_write_text(self.output_dir / RESULT_FILE, json.dumps(result.to_dict(), indent=1))
        distributed.barrier()
        return result


def train(
    settings: EncoderTrainingSettings,
    examples: Sequence[TrainingExample],
    output_dir: str | Path,
    dev_examples: Sequence[TrainingExample] | None = None,
    corpus: Sequence[Ctx] | None = None,
    **options: Any,
) -> EncoderTrainingResult:
    """Train a DPR bi-encoder on ``examples`` into ``output_dir`` (resuming a run found there).

    ``dev_examples`` enable validation and best-model selection; ``corpus`` passages are the
    random-negative pool and the sampled validation pool; ``options`` (``show_progress``, ``on_step``)
    are :class:`EncoderRun`'s. In a DDP process group every process calls this with the same arguments."""
    if settings.threads:
        torch.set_num_threads(check_thread_count("training setting 'threads'", settings.threads))
    return EncoderRun(settings, examples, output_dir, dev_examples, corpus, **options).run()
