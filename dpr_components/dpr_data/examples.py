"""The training example every loader produces: a question with positive and negative passages."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class Ctx(NamedTuple):
    """A passage as the encoders see it: ``[CLS] title [SEP] text [SEP]`` (title may be empty)."""

    title: str
    text: str


def ctx_key(ctx: Ctx) -> str:
    """Identity of a passage for duplicate detection: its text with whitespace normalised."""
    return " ".join(ctx.text.split())


@dataclass
class TrainingExample:
    """One question: gold passages, random negatives (DPR's ``negative_ctxs``) and hard negatives."""

    question: str
    answers: list[str]
    positives: list[Ctx]
    negatives: list[Ctx] = field(default_factory=list)
    hard_negatives: list[Ctx] = field(default_factory=list)
    id: str = ""

    def to_dpr_record(self) -> dict[str, Any]:
        """DPR's biencoder JSON record (``question``, ``answers``, ``*_ctxs`` of ``{title, text}``)."""

        def ctxs(items: list[Ctx]) -> list[dict[str, str]]:
            return [{"title": c.title, "text": c.text} for c in items]

        return {
            "id": self.id,
            "question": self.question,
            "answers": list(self.answers),
            "positive_ctxs": ctxs(self.positives),
            "negative_ctxs": ctxs(self.negatives),
            "hard_negative_ctxs": ctxs(self.hard_negatives),
        }


@dataclass
class LoadedExamples:
    """Examples read from one source, with the number of records skipped for lack of a positive."""

    examples: list[TrainingExample]
    source: str
    skipped_without_positive: int = 0

    def summary(self) -> str:
        hard = sum(1 for e in self.examples if e.hard_negatives)
        return (
            f"{self.source}: {len(self.examples)} examples ({hard} with hard negatives), "
            f"{self.skipped_without_positive} skipped without a positive passage"
        )


def collect_examples(parsed: Iterable[TrainingExample | None], limit: int | None) -> tuple[list[TrainingExample], int]:
    """Keep parsed examples up to ``limit``; ``None`` marks a record skipped for having no positive."""
    examples: list[TrainingExample] = []
    skipped = 0
    for example in parsed:
        if example is None:
            skipped += 1
            continue
        examples.append(example)
        if limit is not None and len(examples) >= limit:
            break
    return examples, skipped
