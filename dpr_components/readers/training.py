"""Reader training loop: resumable checkpoints, JSONL log, best model by dev exact match, fp16 export.

The run folder holds ``checkpoint/`` (model, optimizer, scheduler, RNG states and the data
position, replaced atomically), ``log.jsonl``, ``best/`` (the reader with the best dev EM so
far, fp32 ``DPRReader`` folder) and, at the end, ``export/`` (the best reader in fp16
safetensors, small enough to commit). Running the same command again resumes from the
checkpoint; a finished run only re-exports; Ctrl-C saves a checkpoint first. The loop (cadence,
progress, fault points) and the run mechanics (run folder, schedule, optimizer, generator
states, checkpoint files, log, the handling of NaN or infinite losses) are the DPR trainer's too,
from ``dpr_components.runs``; this module supplies the reader's steps, evaluation and export."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from dpr_components.encoders.text_encoder import BUNDLED_MINILM
from dpr_components.readers.batches import Group, build_group, collate_groups
from dpr_components.readers.data import MinedQuestion, PassageLookup, example_rng
from dpr_components.readers.evaluate import dev_cases, evaluate_reader
from dpr_components.readers.inputs import InputSettings
from dpr_components.readers.loss import Objective, reader_loss, selection_loss
from dpr_components.readers.model import load_reader, reader_to_train, save_reader
from dpr_components.readers.predict import NonFiniteLogits, ReadSettings
from dpr_components.runs.checkpoint_files import (
    CheckpointError,
    check_finite_checkpoint,
    load_tensors,
    restart_hint,
    restore_training,
    resuming,
    write_checkpoint,
)
from dpr_components.runs.finite import apply_update, diverged
from dpr_components.runs.loop import LoopTask, ProgressBar, StepOutcome, run_loop
from dpr_components.runs.optimizer import adamw_with_decay_groups
from dpr_components.runs.process_state import peak_rss_mb, rng_states
from dpr_components.runs.rng import seed_everything
from dpr_components.runs.run_folder import (
    check_same_run,
    clean_run_folder,
    data_fingerprint,
    resume_log,
)
from dpr_components.runs.run_log import RunLog, read_log
from dpr_components.runs.schedule import linear_warmup_decay
from dpr_components.runs.setting_types import check_setting_types
from dpr_components.utils.output_folders import READER_RUN, claim_folder

# Settings that may change between an interrupted run and its resumption.
_RESUMABLE_CHANGES = {
    "output_dir",
    "eval_every",
    "checkpoint_every",
    "log_every",
    "dev_limit",
    "progress",
    "export",
    "max_nonfinite_steps",
}


@dataclass
class TrainConfig:
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
        for name in (
            "passages_per_question",
            "batch_size",
            "epochs",
            "log_every",
            "checkpoint_every",
            "dev_passages",
            "max_answer_length",
        ):
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


@dataclass
class Position:
    """Where training stands: optimizer steps done, and the next example of the epoch's order."""

    step: int = 0
    epoch: int = 0
    index: int = 0
    best_em: float = -1.0
    best_step: int = -1
    last_eval_step: int = -1
    nonfinite_steps: int = 0  # steps skipped for a NaN or infinite loss or gradient norm


@dataclass
class TrainResult:
    position: Position
    total_steps: int
    best_dir: Path | None
    export_dir: Path | None


def total_steps(config: TrainConfig, n_questions: int) -> int:
    per_epoch = -(-n_questions // config.batch_size)
    return min(config.max_steps or per_epoch * config.epochs, per_epoch * config.epochs)


class _Run:
    """One run's folder and its checkpoint: ``checkpoint/`` holds ``state.pt`` (model, optimizer,
    scheduler, RNG states, position, settings, data fingerprint) and ``position.json`` (written last)."""

    log: RunLog  # opened by ``resume``

    def __init__(self, config: TrainConfig, train: Sequence[MinedQuestion]) -> None:
        self.config = config
        self.dir = Path(config.output_dir)
        self.checkpoint_dir = self.dir / "checkpoint"
        self.fingerprint = data_fingerprint(q.to_json() for q in train)
        self.total = total_steps(config, len(train))
        self.hint = restart_hint(
            self.checkpoint_dir, f"use the last exported reader ({self.dir / 'best'} or {self.dir / 'export'})"
        )
        claim_folder(self.dir, READER_RUN, hint="choose another folder for the run")
        clean_run_folder(self.dir)

    def save_checkpoint(
        self, reader: torch.nn.Module, optimizer: Any, scheduler: Any, position: Position, rng: dict[str, Any]
    ) -> None:
        state = {
            "model": reader.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": rng,
            "position": asdict(position),
            "config": asdict(self.config),
            "data": self.fingerprint,
        }
        write_checkpoint(
            self.checkpoint_dir,
            tensors={"state.pt": state},
            texts={},
            marker=("position.json", json.dumps(asdict(position)) + "\n"),
            fault="reader_training.checkpoint.files_written",
        )

    def resume(self, reader: torch.nn.Module, optimizer: Any, scheduler: Any) -> Position | None:
        """Put the checkpoint's state back into the training objects and return its position (None
        without a checkpoint); the log loses the entries of steps after it (they will be run again)."""
        path = self.checkpoint_dir / "state.pt"
        if not path.is_file():
            self.log = resume_log(self.dir, None)
            return None
        state = load_tensors(path, self.hint)
        expected = ("model", "optimizer", "scheduler", "rng", "position", "config", "data")
        if not isinstance(state, dict) or any(key not in state for key in expected):
            raise CheckpointError(f"checkpoint file {path} is damaged (it lacks the training state). {self.hint}")
        check_finite_checkpoint(path, state["model"], self.hint)
        saved = {"objective": "reader", **state["config"]}  # runs from before the setting trained the reader
        check_same_run(self.dir, saved, asdict(self.config), _RESUMABLE_CHANGES, state["data"], self.fingerprint)
        with resuming(self.checkpoint_dir, self.hint):
            restore_training(reader, optimizer, scheduler, state)
            position = Position(**state["position"])
        self.log = resume_log(self.dir, position.step)
        return position

    def last_good_checkpoint(self) -> str:
        """The checkpoint a stopped run keeps, for its error message."""
        marker = self.checkpoint_dir / "position.json"
        if not marker.is_file():
            return "none was written before it"
        try:
            return f"{self.checkpoint_dir} (step {json.loads(marker.read_text(encoding='utf-8'))['step']})"
        except (OSError, ValueError, KeyError, TypeError):
            return str(self.checkpoint_dir)


def train(
    config: TrainConfig,
    train_questions: Sequence[MinedQuestion],
    dev_questions: Sequence[MinedQuestion],
    lookup: PassageLookup,
    after_step: Callable[[int], None] | None = None,
) -> TrainResult:
    """Train (or resume) a reader; ``after_step(step)`` is called after every optimizer step."""
    if not train_questions:
        raise ValueError("no training questions")
    run = _Run(config, train_questions)
    reader, tokenizer = reader_to_train(config.init_model, seed=config.seed)
    positions = getattr(reader.config, "max_position_embeddings", None)
    if positions is not None and config.max_length > positions:
        raise ValueError(
            f"reader training setting 'max_length' {config.max_length} exceeds the {positions} positions "
            f"of {config.init_model}"
        )
    optimizer = adamw_with_decay_groups(reader, config.learning_rate, config.weight_decay)
    scheduler = linear_warmup_decay(optimizer, int(config.warmup_ratio * run.total), run.total, first_step_nonzero=True)
    position = run.resume(reader, optimizer, scheduler)
    if position is not None:
        print(f"resuming from step {position.step} (epoch {position.epoch}, example {position.index})", flush=True)
    else:
        position = Position()
        seed_everything(config.seed)
    dev_questions = dev_questions[: config.dev_limit]
    needed = (i for q in [*train_questions, *dev_questions] for i in [*q.negative_ids, *q.positive_ids, *q.top_ids])
    lookup.preload(needed)
    dev = dev_cases(dev_questions, lookup, config.dev_passages, config.seed)
    task = _ReaderSteps(
        run, _Training(reader, tokenizer, optimizer, scheduler), position, train_questions, lookup, dev, after_step
    )
    reader.train()
    run_loop(task)
    task.end_finished_epoch()
    if dev and position.last_eval_step != position.step:
        task.evaluate()
    task.checkpoint()
    return _finish(run, reader, tokenizer, position)


@dataclass
class _Training:
    """The objects a reader run trains."""

    reader: torch.nn.Module
    tokenizer: Any
    optimizer: Any
    scheduler: Any


class _ReaderSteps(LoopTask):
    """The reader's steps, evaluation and checkpoints for the shared loop
    (:mod:`dpr_components.runs.loop`); Ctrl-C saves a checkpoint unless it interrupts an update."""

    fault = "reader_training.step"

    def __init__(
        self,
        run: _Run,
        training: _Training,
        position: Position,
        questions: Sequence[MinedQuestion],
        lookup: PassageLookup,
        dev: list,
        callback: Callable[[int], None] | None,
    ) -> None:
        self.run, self.config, self.training, self.position = run, run.config, training, position
        self.questions, self.lookup, self.dev, self.callback = questions, lookup, dev, callback
        self.inputs = run.config.input_settings()
        self.total_steps, self.log_every = run.total, run.config.log_every
        self.window = _new_window()
        self.rng_after_step = rng_states()  # what a checkpoint stores: the generators after the last step
        self.in_update = False
        self.stepped = False
        self.order_epoch = -1
        self.order = np.empty(0, dtype=int)

    @property
    def steps_done(self) -> int:
        return self.position.step

    def progress_bar(self) -> ProgressBar:
        return ProgressBar("Training reader", self.config.progress)

    def end_finished_epoch(self) -> None:
        """Move to the next epoch when this one's questions are used up (once this call has stepped:
        a finished run's checkpoint keeps its position)."""
        if self.stepped and self.position.index >= len(self.questions):
            self.position.epoch += 1
            self.position.index = 0

    def _epoch_order(self) -> np.ndarray:
        self.end_finished_epoch()
        if self.order_epoch != self.position.epoch:
            self.order = np.random.default_rng([self.config.seed, self.position.epoch]).permutation(len(self.questions))
            self.order_epoch = self.position.epoch
        return self.order

    def step(self) -> StepOutcome | None:
        config, position, training = self.config, self.position, self.training
        self.stepped = True
        order = self._epoch_order()
        batch_ids = order[position.index : position.index + config.batch_size]
        groups = [
            g
            for i in batch_ids
            if (
                g := build_group(
                    self.questions[int(i)],
                    self.lookup,
                    training.tokenizer,
                    config.passages_per_question,
                    self.inputs,
                    example_rng(config.seed, position.epoch, int(i)),
                    with_spans=config.objective == "reader",
                )
            )
            is not None
        ]
        if not groups:  # no question of this batch has a locatable answer (or, for selection, a positive)
            position.index += len(batch_ids)
            return None
        parts = _backward(training.reader, training.tokenizer, training.optimizer, config, groups)
        self.in_update = True
        skipped = apply_update(
            training.reader,
            training.optimizer,
            training.scheduler,
            parts["loss"],
            parts["grad_norm"],
            position.step + 1,
            position.nonfinite_steps,
            config.max_nonfinite_steps,
            self.run.last_good_checkpoint,
        )
        position.index += len(batch_ids)
        position.step += 1
        position.nonfinite_steps += 0 if skipped is None else 1
        self.rng_after_step = rng_states()
        self.in_update = False
        details = {
            "span_loss": parts["span_loss"],
            "selection_loss": parts["selection_loss"],
            "questions": len(groups),
            "rows": sum(len(g.rows) for g in groups),
        }
        return StepOutcome(parts["loss"], skipped, details=details)

    def record(self, outcome: StepOutcome, bar: tqdm) -> None:
        if outcome.skipped is None:
            _add_to_window(self.window, outcome)
        else:
            self.run.log.write({"step": self.position.step, "event": "skipped", "reason": outcome.skipped})

    def write_log(self, bar: tqdm) -> None:
        if self.window["steps"]:  # a window of skipped steps only has their events
            _log_window(self.run, self.position, self.window, self.training.scheduler.get_last_lr()[0], bar)

    def evaluation_due(self, outcome: StepOutcome, last: bool) -> bool:
        every = self.config.eval_every
        return bool(every) and self.position.step % every == 0 and bool(self.dev)

    def evaluate(self) -> None:
        _evaluate(
            self.run, self.training.reader, self.training.tokenizer, self.dev, self.position, self.config, self.inputs
        )

    def checkpoint_due(self, outcome: StepOutcome, last: bool) -> bool:
        return self.position.step % self.config.checkpoint_every == 0

    def checkpoint(self) -> None:
        training = self.training
        self.run.save_checkpoint(
            training.reader, training.optimizer, training.scheduler, self.position, self.rng_after_step
        )

    def after_step(self) -> None:
        if self.callback is not None:
            self.callback(self.position.step)

    def interrupted(self) -> None:
        if not self.in_update:
            self.checkpoint()
            print(f"\ninterrupted: checkpoint saved at step {self.position.step}", flush=True)


def _backward(
    reader: torch.nn.Module, tokenizer: Any, optimizer: Any, config: TrainConfig, groups: list[Group]
) -> dict[str, float]:
    """Loss and clipped gradients of one batch (parameters unchanged until ``optimizer.step``)."""
    batch = collate_groups(
        groups, config.passages_per_question, tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id
    )
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.bf16):
        output = reader(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], return_dict=True)
    if config.objective == "selection":
        loss, parts = selection_loss(output.relevance_logits.float(), batch["row_mask"])
    else:
        loss, parts = reader_loss(
            output.start_logits.float(),
            output.end_logits.float(),
            output.relevance_logits.float(),
            batch["passage_mask"],
            batch["row_mask"],
            batch["spans"],
            batch["span_mask"],
        )
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(reader.parameters(), config.max_grad_norm)
    return {"loss": float(loss.detach()), "grad_norm": float(grad_norm), **parts}


def _new_window() -> dict[str, Any]:
    """An empty log window: the sums over its updating steps, and when it started."""
    return {
        "loss": 0.0,
        "span_loss": 0.0,
        "selection_loss": 0.0,
        "steps": 0,
        "questions": 0,
        "rows": 0,
        "start": time.perf_counter(),
    }


def _add_to_window(window: dict[str, Any], outcome: StepOutcome) -> None:
    """Count an updating step in the log window."""
    window["loss"] += outcome.loss
    for key in ("span_loss", "selection_loss", "questions", "rows"):
        window[key] += outcome.details[key]
    window["steps"] += 1


def _log_window(run: _Run, position: Position, window: dict[str, Any], lr: float, bar: Any) -> None:
    seconds = time.perf_counter() - window["start"]
    steps = max(window["steps"], 1)
    entry = {
        "step": position.step,
        "epoch": position.epoch,
        "index": position.index,
        "loss": window["loss"] / steps,
        "span_loss": window["span_loss"] / steps,
        "selection_loss": window["selection_loss"] / steps,
        "lr": lr,
        "steps_per_s": window["steps"] / seconds,
        "questions_per_s": window["questions"] / seconds,
        "passages_per_s": window["rows"] / seconds,
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    run.log.write(entry)
    bar.set_postfix(loss=f"{entry['loss']:.3f}", q_s=f"{entry['questions_per_s']:.2f}")
    window.update(_new_window())


def _evaluate(
    run: _Run,
    reader: torch.nn.Module,
    tokenizer: Any,
    dev: list,
    position: Position,
    config: TrainConfig,
    inputs: InputSettings,
) -> None:
    start = time.perf_counter()
    try:
        scores = evaluate_reader(
            reader, tokenizer, dev, inputs, ReadSettings(max_answer_length=config.max_answer_length), bf16=config.bf16
        )
    except NonFiniteLogits:
        raise diverged(
            position.step, "the reader computes NaN or infinite scores on dev questions", run.last_good_checkpoint()
        ) from None
    improved = scores.exact_match > position.best_em
    position.last_eval_step = position.step
    if improved:
        position.best_em, position.best_step = scores.exact_match, position.step
        save_reader(reader, tokenizer, run.dir / "best", info=_info(config, position, scores.f1), overwrite=True)
    run.log.write(
        {
            "step": position.step,
            "dev_em": scores.exact_match,
            "dev_f1": scores.f1,
            "dev_n": scores.n,
            "best": improved,
            "eval_seconds": time.perf_counter() - start,
        }
    )
    mark = " (best)" if improved else ""
    print(f"\nstep {position.step}: dev EM {scores.exact_match:.2f} F1 {scores.f1:.2f}{mark}", flush=True)


def _info(config: TrainConfig, position: Position, dev_f1: float | None) -> dict[str, Any]:
    return {"training": asdict(config), "step": position.step, "dev_em": position.best_em, "dev_f1": dev_f1}


def _logged_dev(run_dir: Path, step: int) -> tuple[float | None, float | None]:
    """Dev EM/F1 evaluated at ``step``, from the run's log (None, None if it was not evaluated there)."""
    found = [e for e in read_log(run_dir / "log.jsonl") if e.get("step") == step and "dev_em" in e]
    return (found[-1]["dev_em"], found[-1].get("dev_f1")) if found else (None, None)


def _finish(run: _Run, reader: torch.nn.Module, tokenizer: Any, position: Position) -> TrainResult:
    """Export the best reader (the last one with ``export="last"`` or without dev questions) as fp16 safetensors."""
    best_dir = run.dir / "best"
    if run.config.export == "best" and best_dir.is_dir():
        source, source_tokenizer = load_reader(best_dir)
        info = _info(run.config, position, None)
        if (best_dir / "reader_info.json").is_file():
            info = json.loads((best_dir / "reader_info.json").read_text(encoding="utf-8"))
    else:
        source, source_tokenizer = reader, tokenizer
        em, f1 = _logged_dev(run.dir, position.step)
        info = {"training": asdict(run.config), "step": position.step, "exported": "last", "dev_em": em, "dev_f1": f1}
    export_dir = run.dir / "export"
    save_reader(source, source_tokenizer, export_dir, dtype=torch.float16, info=info, overwrite=True)
    return TrainResult(position, run.total, best_dir if best_dir.is_dir() else None, export_dir)
