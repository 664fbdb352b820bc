"""Label-free adaptation of the question encoder to a store (GPL-style, without a query generator).

A store of the user's passages and no questions: pseudo-queries are made from the passages
(:mod:`~dpr_components.encoder_training.pseudo_queries`), each query's candidates are the hybrid's top K
over the store, scored by the re-ranker (:func:`~dpr_components.encoder_training.teacher_scoring.score_to_file`),
and the question encoder alone is distilled from those scores against the store's own passage vectors
(:func:`~dpr_components.encoder_training.distillation.train_distillation`): the store is not re-indexed.

The run folder (a DPR training run: the distillation's files, and)::

    adaptation_settings.json    the settings and a fingerprint of the pseudo-queries (another run is refused)
    teacher.jsonl               the scored pseudo-queries (appended to; a resumed run skips those written)
    question_encoder/           the result, paired with the store's passage encoder
    adaptation.json, .md        the report

Both phases stop at a time bound (:class:`~dpr_components.runs.deadline.Deadline`) and resume when the same
run is started again. Stopped while scoring, the run trains nothing yet and writes the starting encoder (paired
with the store) as ``question_encoder/``; stopped while training, it writes the encoder of its last step."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dpr_components.dpr_data.teacher_file import read_teacher_file
from dpr_components.encoder_training.adaptation_report import AdaptationOutcome, training_result, write_report
from dpr_components.encoder_training.distillation import (
    QUESTION_ENCODER,
    DistillationSettings,
    export_question_encoder,
    train_distillation,
)
from dpr_components.encoder_training.pseudo_queries import (
    PseudoQueries,
    PseudoQuerySettings,
    StorePassage,
    make_pseudo_queries,
)
from dpr_components.encoder_training.teacher_scoring import FirstStage, Teacher, TeacherQuestion, score_to_file
from dpr_components.encoders.pairing import check_pairing, expected_passage_digest, weights_digest
from dpr_components.runs import run_folder
from dpr_components.runs.deadline import Deadline
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.json_files import read_optional_json
from dpr_components.utils.output_folders import DPR_RUN, claim_folder

SETTINGS_FILE = "adaptation_settings.json"
TEACHER_FILE = "teacher.jsonl"
# what may change between the runs of one adaptation (it does not change what is computed)
RESUMABLE = {"checkpoint_every", "keep_checkpoints", "log_every"}


@dataclass
class AdaptationPlan:
    """What one adaptation does: the store (an ``EmbeddedDocumentStore``) and its folder, the starting
    question encoder and the passage encoder that indexed the store, how queries are made, how many
    candidates the first stage gives each, the distillation's settings and, for the record, the first
    stage's and the teacher's."""

    store: Any
    store_path: str
    model: str
    passage_model: str
    queries: PseudoQuerySettings = field(default_factory=PseudoQuerySettings)
    top_k: int = 20
    scoring_batch: int = 8
    training: dict[str, Any] = field(default_factory=dict)
    scorers: dict[str, Any] = field(default_factory=dict)

    def identity(self) -> dict[str, Any]:
        """The settings a resumed run must share."""
        return {
            "store": self.store_path,
            "model": self.model,
            "passage_model": self.passage_model,
            **{f"query_{name}" if name == "method" else name: v for name, v in asdict(self.queries).items()},
            "top_k": self.top_k,
            "scorers": self.scorers,
            "training": {k: v for k, v in sorted(self.training.items()) if k not in RESUMABLE},
        }

    def distillation(self, out: Path) -> DistillationSettings:
        """The distillation of the scored pseudo-queries in ``out``."""
        return DistillationSettings(
            teacher_file=str(out / TEACHER_FILE),
            store=self.store_path,
            model=self.model,
            passage_model=self.passage_model,
            **self.training,
        )


def check_store(plan: AdaptationPlan) -> str:
    """The digest of the passage encoder that made the store's vectors; one line when the store holds no
    passage, no stamped vector, or vectors of another passage encoder than the plan's."""
    where = f"store {plan.store_path}"
    if plan.store.count_documents() == 0:
        raise ValueError(
            f"{where} holds no passages: index your documents first "
            f"(haystack run index --store {plan.store_path} --input path=CORPUS)"
        )
    recorded = plan.store.passage_encoder
    if recorded is None:
        raise ValueError(
            f"{where} holds no passage vectors (its passages were written without PassageEmbedder): "
            "index them with pipelines/index.yml, which embeds and stamps them"
        )
    digest = weights_digest(plan.passage_model)
    if digest != recorded:
        raise ValueError(
            f"{where}: its passages were embedded by another passage encoder (weights {recorded}) than "
            f"passage_model {plan.passage_model!r} (weights {digest}); give the passage encoder that indexed it"
        )
    check_pairing(plan.model, expected_passage_digest(plan.model), {recorded})
    return recorded


def store_passages(store: Any) -> list[StorePassage]:
    """The store's passages that have text and a vector."""
    return [
        StorePassage(d.id, d.content, str(d.meta.get("document_id", d.id)))
        for d in store.filter_documents()
        if d.content and d.embedding is not None
    ]


def _queries_fingerprint(questions: list[TeacherQuestion]) -> str:
    return run_folder.data_fingerprint(f"{q.id}\t{q.question}" for q in questions)


def claim_run(out: Path, plan: AdaptationPlan, queries: PseudoQueries) -> None:
    """Claim ``out``, or check that it holds this adaptation: the same settings and the same pseudo-queries."""
    claim_folder(out, DPR_RUN)
    path = out / SETTINGS_FILE
    current: dict[str, Any] = {"settings": plan.identity(), "queries": _queries_fingerprint(queries.questions)}
    saved = read_optional_json(path, lambda error: ValueError(f"cannot read {path}: {error}"))
    if saved is None:
        atomic_write_text(path, json.dumps(current, indent=1) + "\n")
        return
    changed = run_folder.changed_settings(saved.get("settings", {}), current["settings"], RESUMABLE)
    if changed:
        described = ", ".join(f"{name} {old!r} -> {new!r}" for name, (old, new) in changed.items())
        raise ValueError(
            f"{out} holds an adaptation with other settings ({described}): run it again with the same settings "
            "to resume it, or give another output folder"
        )
    if saved.get("queries") != current["queries"]:
        raise ValueError(
            f"{out} holds an adaptation of other passages (the store changed since it started): "
            "give another output folder"
        )


def _starting_encoder(plan: AdaptationPlan, out: Path) -> Path:
    """The starting question encoder as ``out/question_encoder`` (paired with the store), when it is missing."""
    folder = out / QUESTION_ENCODER
    if not folder.is_dir():
        from dpr_components.encoder_training.model import BiEncoder

        export_question_encoder(BiEncoder.from_pretrained(plan.model, tie=True), folder, plan.passage_model)
    return folder


def adapt_question_encoder(
    plan: AdaptationPlan,
    make_scorers: Callable[[], tuple[FirstStage, Teacher]],
    out: str | Path,
    deadline: Deadline | None = None,
    show_progress: bool = True,
) -> AdaptationOutcome:
    """Run (or resume) the adaptation ``plan`` into ``out``; ``make_scorers`` builds the first stage and
    the teacher when there are queries left to score. Returns what was done (also written as the report)."""
    out, deadline = Path(out), deadline or Deadline()
    started = time.monotonic()
    recorded = check_store(plan)
    queries = make_pseudo_queries(store_passages(plan.store), plan.queries)
    if not queries.questions:
        raise ValueError(
            f"store {plan.store_path}: no passage gives a pseudo-query (each needs {plan.queries.min_passage_words} "
            f"words{' and two sentences' if plan.queries.method == 'ict' else ''})"
        )
    claim_run(out, plan, queries)
    teacher_file = out / TEACHER_FILE
    scored = len(read_teacher_file(teacher_file)) if teacher_file.exists() else 0
    if scored < len(queries.questions):
        first_stage, teacher = make_scorers()
        resumed, written = score_to_file(
            queries.questions,
            first_stage,
            teacher,
            teacher_file,
            plan.top_k,
            plan.scoring_batch,
            show_progress,
            deadline,
            desc="pseudo-queries scored",
        )
        scored = resumed + written
    scoring_minutes = (time.monotonic() - started) / 60
    outcome = AdaptationOutcome(plan.identity(), queries.counts(), scored, plan.store.count_documents(), recorded)
    if scored < len(queries.questions):
        outcome.question_encoder = str(_starting_encoder(plan, out))
    else:
        training = time.monotonic()
        outcome.question_encoder = str(train_distillation(plan.distillation(out), out, show_progress, deadline))
        outcome.training_minutes = (time.monotonic() - training) / 60
        outcome.training = training_result(out)
    check_pairing(outcome.question_encoder, expected_passage_digest(outcome.question_encoder), {recorded})
    outcome.scoring_minutes, outcome.stopped_by_time = scoring_minutes, deadline.reached
    outcome.report = write_report(out, outcome, plan.store_path)
    return outcome
