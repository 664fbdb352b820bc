"""Train a span reader: resumable checkpoints, JSONL log, best model by dev exact match, fp16 export.

The run folder holds ``checkpoint/`` (model, optimizer, scheduler, RNG states and the training
state, replaced atomically), ``log.jsonl``, ``best/`` (the reader with the best dev EM so far,
fp32 ``DPRReader`` folder) and, at the end, ``export/`` (the best reader in fp16 safetensors,
small enough to commit). Running the same command again resumes from the checkpoint; a finished
run only re-exports; Ctrl-C saves a checkpoint first. The loop (cadence, log window, progress,
fault points) and the run mechanics (run folder, schedule, optimizer, generator states, checkpoint
files, log, the handling of NaN or infinite losses) are the bi-encoder trainer's too, from
:mod:`dpr_components.runs`; :class:`~dpr_components.reader_training.task.ReaderTask` supplies the
reader's steps."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from dpr_components.encoders.model_layout import check_max_length
from dpr_components.reader_training.checkpoints import ReaderRun, ReaderTrainingState
from dpr_components.reader_training.data import MinedQuestion, PassageLookup
from dpr_components.reader_training.evaluate import dev_cases
from dpr_components.reader_training.export import export_reader
from dpr_components.reader_training.model import reader_to_train
from dpr_components.reader_training.settings import ReaderTrainingSettings
from dpr_components.reader_training.task import ReaderObjects, ReaderTask
from dpr_components.runs.loop import run_loop
from dpr_components.runs.optimizer import adamw_with_decay_groups
from dpr_components.runs.result import TrainingResult
from dpr_components.runs.rng import seed_everything
from dpr_components.runs.schedule import linear_warmup_decay


@dataclass(kw_only=True)
class ReaderTrainingResult(TrainingResult):
    """Where the trained reader is and where training stopped (the reader does not stop early)."""

    state: ReaderTrainingState
    best_dir: Path | None
    export_dir: Path | None


def _build(settings: ReaderTrainingSettings, run: ReaderRun) -> ReaderObjects:
    """The reader to train (checked to fit ``max_length``), its tokenizer, optimizer and schedule."""
    reader, tokenizer = reader_to_train(settings.init_model, seed=settings.seed)
    positions = getattr(reader.config, "max_position_embeddings", None)
    if positions is not None:
        check_max_length(settings.max_length, positions, f"{settings.LABEL} 'max_length' (for {settings.init_model})")
    optimizer = adamw_with_decay_groups(reader, settings.learning_rate, settings.weight_decay)
    warmup = int(settings.warmup_ratio * run.total_steps)
    scheduler = linear_warmup_decay(optimizer, warmup, run.total_steps, first_step_nonzero=True)
    return ReaderObjects(reader, tokenizer, optimizer, scheduler)


def train(
    settings: ReaderTrainingSettings,
    train_questions: Sequence[MinedQuestion],
    dev_questions: Sequence[MinedQuestion],
    lookup: PassageLookup,
    after_step: Callable[[int], None] | None = None,
) -> ReaderTrainingResult:
    """Train (or resume) a reader; ``after_step(step)`` is called after every optimizer step."""
    if not train_questions:
        raise ValueError("no training questions")
    run = ReaderRun(settings, train_questions)
    objects = _build(settings, run)
    state = run.resume(objects.reader, objects.optimizer, objects.scheduler)
    if state is not None:
        print(f"resuming from step {state.step} (epoch {state.epoch}, example {state.index})", flush=True)
    else:
        state = ReaderTrainingState()
        seed_everything(settings.seed)
    dev_questions = dev_questions[: settings.dev_limit]
    needed = (i for q in [*train_questions, *dev_questions] for i in [*q.negative_ids, *q.positive_ids, *q.top_ids])
    lookup.preload(needed)
    dev = dev_cases(dev_questions, lookup, settings.dev_passages, settings.seed)
    task = ReaderTask(run, objects, state, train_questions, lookup, dev)
    objects.reader.train()
    run_loop(task, None if after_step is None else lambda done: after_step(done.step))
    task.end_finished_epoch()
    if dev and state.last_eval_step != state.step:
        task.evaluate()
    task.checkpoint()
    export_dir = export_reader(run, objects.reader, objects.tokenizer, state)
    best_dir = run.dir / "best"
    return ReaderTrainingResult(
        output_dir=str(run.dir),
        steps=state.step,
        total_steps=run.total_steps,
        state=state,
        best_dir=best_dir if best_dir.is_dir() else None,
        export_dir=export_dir,
    )
