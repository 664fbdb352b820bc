"""Distil a re-ranker into the question encoder alone: the passage vectors stay those of the store
(read from it), so an index built with the fixed passage encoder serves the new question encoder.

A run folder (a DPR training run, resumable)::

    config.json             the settings and a fingerprint of the teacher records
    log.jsonl               loss per logged step
    checkpoints/step-N/     model, optimizer, scheduler, generators and position (the encoder loop's layout)
    question_encoder/       the result: the question encoder, paired with ``passage_model`` (no re-index)

Each step encodes a batch of questions and takes the loss of
:class:`~dpr_components.encoder_training.losses.distillation.ListwiseDistillationLoss` over their
candidates from the teacher file."""

from __future__ import annotations

import dataclasses
import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from dpr_components.dpr_data.teacher_file import TeacherRecord, read_teacher_file
from dpr_components.encoder_training.checkpoints import (
    EncoderTrainingState,
    latest_checkpoint,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from dpr_components.encoder_training.distillation_batches import PassageTable, PositiveField, make_batch, store_vectors
from dpr_components.encoder_training.export import save_encoder_folder
from dpr_components.encoder_training.losses.distillation import ListwiseDistillationLoss
from dpr_components.encoder_training.model import BiEncoder
from dpr_components.encoders.pairing import write_question_pair_file
from dpr_components.runs import run_folder
from dpr_components.runs.deadline import Deadline
from dpr_components.runs.optimizer import adamw_with_decay_groups
from dpr_components.runs.rng import seed_everything
from dpr_components.runs.schedule import linear_warmup_decay
from dpr_components.utils.atomic_files import atomic_directory, atomic_write_text
from dpr_components.utils.output_folders import DPR_RUN, MODEL, claim_folder, write_marker

QUESTION_ENCODER = "question_encoder"
CHECKPOINTS = "checkpoints"
RESUMABLE = {"keep_checkpoints", "checkpoint_every", "log_every"}


@dataclass
class DistillationSettings:
    """One distillation run: the teacher file and store, the starting question encoder and the passage
    encoder it is paired with (never trained), the loss and the optimisation. The teacher's score of a
    candidate is its logit plus ``retrieval_weight`` times the first stage's score (0.75: the order
    ``pipelines/qa_rerank.yml`` ranks by)."""

    teacher_file: str
    store: str
    model: str = "bundled:dpr-minilm-multi/question_encoder"
    passage_model: str = "bundled:all-MiniLM-L6-v2"
    student_temperature: float = 0.05
    teacher_temperature: float = 1.0
    retrieval_weight: float = 0.0
    contrastive_weight: float = 0.0
    positive: PositiveField = "gold"
    limit: int | None = None
    batch_size: int = 32
    learning_rate: float = 2e-5
    weight_decay: float = 0.0
    warmup_ratio: float = 0.1
    epochs: int = 1
    max_grad_norm: float = 2.0
    seed: int = 0
    checkpoint_every: int = 100
    keep_checkpoints: int = 2
    log_every: int = 10

    def __post_init__(self) -> None:
        if self.positive not in ("gold", "has_answer"):
            raise ValueError(f"positive must be 'gold' or 'has_answer', got {self.positive!r}")
        for name in ("batch_size", "epochs", "checkpoint_every", "keep_checkpoints", "log_every"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")


@dataclass
class _Objects:
    model: BiEncoder
    loss: ListwiseDistillationLoss
    optimizer: torch.optim.Optimizer
    scheduler: Any
    table: PassageTable


def usable_records(settings: DistillationSettings) -> list[TeacherRecord]:
    """The teacher file's records with at least one candidate (the first ``limit``)."""
    return [r for r in read_teacher_file(settings.teacher_file, settings.limit) if r.passage_ids]


def _build(settings: DistillationSettings, records: list[TeacherRecord], total: int) -> _Objects:
    seed_everything(settings.seed)
    model = BiEncoder.from_pretrained(settings.model, tie=True)
    loss = ListwiseDistillationLoss(
        settings.student_temperature, settings.teacher_temperature, settings.contrastive_weight
    )
    optimizer = adamw_with_decay_groups(model, settings.learning_rate, settings.weight_decay)
    scheduler = linear_warmup_decay(optimizer, int(settings.warmup_ratio * total), total)
    table = store_vectors(settings.store, {i for r in records for i in r.passage_ids})
    return _Objects(model, loss, optimizer, scheduler, table)


def _order(count: int, seed: int, epoch: int) -> list[int]:
    order = list(range(count))
    random.Random(seed * 1000 + epoch).shuffle(order)
    return order


def _step(objects: _Objects, records: list[TeacherRecord], settings: DistillationSettings) -> float:
    batch = make_batch(records, objects.table, settings.positive, settings.retrieval_weight)
    model = objects.model
    questions = model.encode_questions(model.tokenize_questions(batch.questions))
    loss = objects.loss(questions, batch.vectors, batch.teacher, batch.mask, batch.batch_positives, batch.batch_mask)
    objects.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), settings.max_grad_norm)
    objects.optimizer.step()
    objects.scheduler.step()
    return float(loss.detach())


def _start(out: Path, settings: DistillationSettings, records: list[TeacherRecord]) -> None:
    """Claim ``out`` for the run, or check that it holds this run (same settings, same records)."""
    claim_folder(out, DPR_RUN)
    run_folder.clean_run_folder(out, CHECKPOINTS)
    config = dataclasses.asdict(settings)
    fingerprint = run_folder.data_fingerprint(f"{r.id}\t{r.passage_ids}\t{r.teacher}" for r in records)
    saved = run_folder.read_settings(out)
    if saved is None:
        run_folder.write_settings(out, {"config": config, "data": fingerprint, "records": len(records)})
    else:
        run_folder.check_same_run(out, saved["config"], config, RESUMABLE, saved.get("data"), fingerprint)


def export_question_encoder(model: BiEncoder, out: Path, passage_model: str) -> Path:
    """The question encoder alone at ``out`` (replaced atomically), paired with ``passage_model``."""
    with atomic_directory(out) as tmp:
        save_encoder_folder(model.question_model, model.question_tokenizer, tmp, model.encoder_metadata())
        write_question_pair_file(tmp, passage_model)
        write_marker(tmp, MODEL)
    return out


def _run_steps(
    objects: _Objects,
    records: list[TeacherRecord],
    settings: DistillationSettings,
    state: EncoderTrainingState,
    out: Path,
    deadline: Deadline | None,
    show_progress: bool,
) -> bool:
    """The steps from ``state`` to the end of the last epoch, or to the first step after ``deadline``
    passed (checkpointed there); whether the run is complete."""
    per_epoch = -(-len(records) // settings.batch_size)
    total = per_epoch * settings.epochs
    if deadline is not None and deadline.passed():
        return state.step >= total
    log = run_folder.resume_log(out, state.step if state.step else None)
    bar = tqdm(
        total=total, initial=state.step, desc=f"distilling -> {out.name}", unit="step", disable=not show_progress
    )
    started = time.monotonic() - state.elapsed_seconds
    while state.epoch < settings.epochs:
        order = _order(len(records), settings.seed, state.epoch)
        while state.batch_in_epoch < per_epoch:
            start = state.batch_in_epoch * settings.batch_size
            loss = _step(objects, [records[i] for i in order[start : start + settings.batch_size]], settings)
            state.step, state.batch_in_epoch = state.step + 1, state.batch_in_epoch + 1
            state.elapsed_seconds = time.monotonic() - started
            bar.update(1)
            if state.step % settings.log_every == 0:
                log.write({"step": state.step, "loss": loss, "lr": objects.scheduler.get_last_lr()[0]})
            stopping = deadline is not None and deadline.passed()
            if state.step % settings.checkpoint_every == 0 or state.step == total or stopping:
                save_checkpoint(out / CHECKPOINTS, objects.model, objects.optimizer, objects.scheduler, state)
                prune_checkpoints(out / CHECKPOINTS, settings.keep_checkpoints)
            if stopping and state.step < total:
                bar.close()
                return False
        state.epoch, state.batch_in_epoch = state.epoch + 1, 0
    bar.close()
    return True


def train_distillation(
    settings: DistillationSettings, out: str | Path, show_progress: bool = True, deadline: Deadline | None = None
) -> Path:
    """Run (or resume) the distillation into ``out``; returns the exported question encoder's folder.

    With ``deadline``, the run stops at the first step after it passed, with a checkpoint there, and
    exports the encoder it has; ``result.json`` says whether the run is ``complete`` (the same call again
    resumes it)."""
    out = Path(out)
    records = usable_records(settings)
    if not records:
        raise ValueError(f"{settings.teacher_file}: no question with candidates to learn from")
    _start(out, settings, records)
    total = -(-len(records) // settings.batch_size) * settings.epochs
    objects = _build(settings, records, total)
    resumed = latest_checkpoint(out / CHECKPOINTS)
    state = EncoderTrainingState()
    if resumed is not None:
        state = load_checkpoint(resumed, objects.model, objects.optimizer, objects.scheduler)
    objects.model.train()
    complete = _run_steps(objects, records, settings, state, out, deadline, show_progress)
    result = {"steps": state.step, "seconds": state.elapsed_seconds, "total_steps": total, "complete": complete}
    atomic_write_text(out / "result.json", json.dumps(result) + "\n")
    return export_question_encoder(objects.model, out / QUESTION_ENCODER, settings.passage_model)
