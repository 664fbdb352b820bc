"""The reader's task for the shared training loop (:mod:`dpr_components.runs.loop`): one optimizer
step over a batch of questions, the log entry of a window, dev evaluation that keeps the best reader
in ``best/``, and checkpoints; Ctrl-C saves a checkpoint unless it interrupts an update."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from dpr_components.reader_training.batching import Group, build_group, collate_groups
from dpr_components.reader_training.checkpoints import ReaderRun, ReaderTrainingState
from dpr_components.reader_training.data import MinedQuestion, PassageLookup, example_rng
from dpr_components.reader_training.evaluate import ReadingCase, evaluate_reader
from dpr_components.reader_training.loss import reader_loss, selection_loss
from dpr_components.reader_training.settings import ReaderTrainingSettings
from dpr_components.readers.model import save_reader
from dpr_components.readers.predict import NonFiniteLogits, ReadSettings
from dpr_components.runs.finite import apply_update, diverged
from dpr_components.runs.log_window import LogWindow
from dpr_components.runs.loop import LoopTask, ProgressBar, StepOutcome
from dpr_components.runs.process_state import peak_rss_mb, rng_states

POSTFIX = {"loss": "{loss:.3f}", "q_s": "{questions_per_s:.2f}"}


@dataclass
class ReaderObjects:
    """The objects a reader run trains."""

    reader: torch.nn.Module
    tokenizer: Any
    optimizer: Any
    scheduler: Any


def training_info(settings: ReaderTrainingSettings, state: ReaderTrainingState, dev_f1: float | None) -> dict[str, Any]:
    """What a saved reader records of its training (``reader_info.json``)."""
    return {"training": settings.to_dict(), "step": state.step, "dev_em": state.best_em, "dev_f1": dev_f1}


def backward(
    reader: torch.nn.Module, tokenizer: Any, optimizer: Any, settings: ReaderTrainingSettings, groups: list[Group]
) -> dict[str, float]:
    """Loss and clipped gradients of one batch (parameters unchanged until ``optimizer.step``)."""
    batch = collate_groups(
        groups, settings.passages_per_question, tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id
    )
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=settings.bf16):
        output = reader(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], return_dict=True)
    if settings.objective == "selection":
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
    grad_norm = torch.nn.utils.clip_grad_norm_(reader.parameters(), settings.max_grad_norm)
    return {"loss": float(loss.detach()), "grad_norm": float(grad_norm), **parts}


class ReaderTask(LoopTask):
    """The reader's steps, evaluation and checkpoints, as the shared loop runs them."""

    fault = "reader_training.step"
    state: ReaderTrainingState

    def __init__(
        self,
        run: ReaderRun,
        objects: ReaderObjects,
        state: ReaderTrainingState,
        questions: Sequence[MinedQuestion],
        lookup: PassageLookup,
        dev: list[ReadingCase],
    ) -> None:
        self.run, self.settings, self.objects, self.state = run, run.settings, objects, state
        self.questions, self.lookup, self.dev = questions, lookup, dev
        self.inputs = run.settings.input_settings()
        self.total_steps, self.log_every, self.log = run.total_steps, run.settings.log_every, run.log
        self.looks = ProgressBar("Training reader", run.settings.progress, postfix=POSTFIX)
        self.window = LogWindow()
        self.rng_after_step = rng_states()  # what a checkpoint stores: the generators after the last step
        self.in_update = False
        self.stepped = False
        self.order_epoch = -1
        self.order = np.empty(0, dtype=int)

    def end_finished_epoch(self) -> None:
        """Move to the next epoch when this one's questions are used up (once this task has stepped:
        a finished run's checkpoint keeps its position)."""
        if self.stepped and self.state.index >= len(self.questions):
            self.state.epoch += 1
            self.state.index = 0

    def _epoch_order(self) -> np.ndarray:
        self.end_finished_epoch()
        if self.order_epoch != self.state.epoch:
            self.order = np.random.default_rng([self.settings.seed, self.state.epoch]).permutation(len(self.questions))
            self.order_epoch = self.state.epoch
        return self.order

    def _groups(self, batch_ids: np.ndarray) -> list[Group]:
        """The batch's training groups (questions without a locatable answer, or positive, give none)."""
        settings, epoch = self.settings, self.state.epoch
        groups = []
        for i in batch_ids:
            group = build_group(
                self.questions[int(i)],
                self.lookup,
                self.objects.tokenizer,
                settings.passages_per_question,
                self.inputs,
                example_rng(settings.seed, epoch, int(i)),
                with_spans=settings.objective == "reader",
            )
            if group is not None:
                groups.append(group)
        return groups

    def step(self) -> StepOutcome | None:
        settings, state, objects = self.settings, self.state, self.objects
        self.stepped = True
        batch_ids = self._epoch_order()[state.index : state.index + settings.batch_size]
        groups = self._groups(batch_ids)
        if not groups:  # no question of this batch has a locatable answer (or, for selection, a positive)
            state.index += len(batch_ids)
            return None
        parts = backward(objects.reader, objects.tokenizer, objects.optimizer, settings, groups)
        self.in_update = True
        skipped = apply_update(
            objects.reader,
            objects.optimizer,
            objects.scheduler,
            parts["loss"],
            parts["grad_norm"],
            state.step + 1,
            state.nonfinite_steps,
            settings.max_nonfinite_steps,
            self.run.last_good_checkpoint,
        )
        state.index += len(batch_ids)
        state.step += 1
        state.nonfinite_steps += 0 if skipped is None else 1
        self.rng_after_step = rng_states()
        self.in_update = False
        if skipped is not None:
            self.run.log.write({"step": state.step, "event": "skipped", "reason": skipped})
        numbers = {name: parts[name] for name in ("loss", "span_loss", "selection_loss")}
        numbers.update(questions=len(groups), rows=sum(len(g.rows) for g in groups))
        evaluate = bool(settings.eval_every) and state.step % settings.eval_every == 0 and bool(self.dev)
        checkpoint = state.step % settings.checkpoint_every == 0
        return StepOutcome(numbers, skipped, len(groups), evaluate, checkpoint)

    def log_entry(self, window: LogWindow, now: float) -> dict[str, Any]:
        state = self.state
        return {
            "step": state.step,
            "epoch": state.epoch,
            "index": state.index,
            "loss": window.mean("loss"),
            "span_loss": window.mean("span_loss"),
            "selection_loss": window.mean("selection_loss"),
            "lr": self.objects.scheduler.get_last_lr()[0],
            "steps_per_s": window.rate(window.steps, now),
            "questions_per_s": window.rate(window.sums["questions"], now),
            "passages_per_s": window.rate(window.sums["rows"], now),
            "peak_rss_mb": round(peak_rss_mb(), 1),
        }

    def evaluate(self) -> bool:
        """Dev exact match and F1; a better reader than the best so far is saved in ``best/``."""
        state, settings, objects = self.state, self.settings, self.objects
        start = time.perf_counter()
        try:
            scores = evaluate_reader(
                objects.reader,
                objects.tokenizer,
                self.dev,
                self.inputs,
                ReadSettings(max_answer_length=settings.max_answer_length),
                bf16=settings.bf16,
            )
        except NonFiniteLogits:
            raise diverged(
                state.step,
                "the reader computes NaN or infinite scores on dev questions",
                self.run.last_good_checkpoint(),
            ) from None
        improved = scores.exact_match > state.best_em
        state.last_eval_step = state.step
        if improved:
            state.best_em, state.best_step = scores.exact_match, state.step
            info = training_info(settings, state, scores.f1)
            save_reader(objects.reader, objects.tokenizer, self.run.dir / "best", info=info, overwrite=True)
        self.run.log.write(
            {
                "step": state.step,
                "dev_em": scores.exact_match,
                "dev_f1": scores.f1,
                "dev_n": scores.n,
                "best": improved,
                "eval_seconds": time.perf_counter() - start,
            }
        )
        mark = " (best)" if improved else ""
        print(f"\nstep {state.step}: dev EM {scores.exact_match:.2f} F1 {scores.f1:.2f}{mark}", flush=True)
        return False

    def checkpoint(self) -> None:
        objects = self.objects
        self.run.save_checkpoint(objects.reader, objects.optimizer, objects.scheduler, self.state, self.rng_after_step)

    def interrupted(self) -> None:
        if not self.in_update:
            self.checkpoint()
            print(f"\ninterrupted: checkpoint saved at step {self.state.step}", flush=True)
