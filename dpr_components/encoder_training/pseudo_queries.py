"""Pseudo-queries made from a store's own passages, for adapting the question encoder without questions.

Two label-free methods, chosen by the setting ``method``:

* ``ict``, the inverse cloze task (Lee et al. 2019, ORQA): one sentence of the passage is its query;
* ``crop``, random cropping (Izacard et al. 2021, Contriever): a random span of the passage's words.

Both are seeded and deterministic: the passages are taken in a seeded shuffle of their ids, and each
passage's query is drawn by a generator seeded by the seed, the method and the passage id, so a run
makes the same queries whatever order the store returns its passages in. Passages shorter than
``min_passage_words`` are skipped, and for ``ict`` those without two sentences (one to ask, one to keep);
at most ``max_passages`` passages give a query, one each."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from dpr_components.encoder_training.teacher_scoring import TeacherQuestion

QueryMethod = Literal["ict", "crop"]
QUERY_METHODS: tuple[str, ...] = get_args(QueryMethod)
# A sentence ends at . ! or ? followed by space and a capital, a digit or an opening quote or bracket.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


@dataclass(frozen=True)
class PseudoQuerySettings:
    """How pseudo-queries are made: the method, how many passages give one, the seed and the lengths (words)."""

    method: QueryMethod = "crop"
    max_passages: int = 10_000
    seed: int = 0
    min_passage_words: int = 20
    min_query_words: int = 4
    max_query_words: int = 32

    def __post_init__(self) -> None:
        if self.method not in QUERY_METHODS:
            raise ValueError(f"query_method must be one of {', '.join(QUERY_METHODS)}, got {self.method!r}")
        for name in ("max_passages", "min_passage_words", "min_query_words", "max_query_words"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"seed must be an integer, got {self.seed!r}")
        if self.min_query_words > self.max_query_words:
            raise ValueError(
                f"min_query_words ({self.min_query_words}) must not exceed max_query_words ({self.max_query_words})"
            )


@dataclass(frozen=True)
class StorePassage:
    """A passage of the store: its id, text and the id of the document it was cut from."""

    id: str
    text: str
    document_id: str


@dataclass
class PseudoQueries:
    """The queries made and what was read and skipped on the way."""

    questions: list[TeacherQuestion] = field(default_factory=list)
    passages_read: int = 0
    skipped_short: int = 0
    skipped_no_sentence: int = 0

    def counts(self) -> dict[str, int]:
        """The counts, for a report."""
        return {
            "pseudo_queries": len(self.questions),
            "passages_read": self.passages_read,
            "skipped_short": self.skipped_short,
            "skipped_no_sentence": self.skipped_no_sentence,
        }


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (a plain rule: end punctuation, then a capital or a digit)."""
    return [part.strip() for part in _SENTENCE_END.split(text.strip()) if part.strip()]


def _clipped(words: Sequence[str], settings: PseudoQuerySettings) -> str:
    return " ".join(words[: settings.max_query_words])


def ict_query(text: str, rng: random.Random, settings: PseudoQuerySettings) -> str | None:
    """One sentence of ``text`` of at least ``min_query_words`` words (None: fewer than two sentences,
    or none long enough)."""
    found = sentences(text)
    if len(found) < 2:
        return None
    eligible = [s.split() for s in found if len(s.split()) >= settings.min_query_words]
    return _clipped(rng.choice(eligible), settings) if eligible else None


def crop_query(text: str, rng: random.Random, settings: PseudoQuerySettings) -> str:
    """A random span of ``text``'s words: ``min_query_words`` to ``max_query_words`` long, at most half the
    passage (the passage has at least ``min_passage_words`` words)."""
    words = text.split()
    longest = max(settings.min_query_words, min(settings.max_query_words, len(words) // 2))
    length = min(len(words), rng.randint(settings.min_query_words, longest))
    start = rng.randint(0, len(words) - length)
    return " ".join(words[start : start + length])


def make_pseudo_queries(passages: Sequence[StorePassage], settings: PseudoQuerySettings) -> PseudoQueries:
    """One query for each of at most ``max_passages`` passages, in the seeded order of their ids."""
    order = sorted(passages, key=lambda p: p.id)
    random.Random(settings.seed).shuffle(order)
    made = PseudoQueries()
    for passage in order:
        if len(made.questions) >= settings.max_passages:
            break
        made.passages_read += 1
        if len(passage.text.split()) < settings.min_passage_words:
            made.skipped_short += 1
            continue
        rng = random.Random(f"{settings.seed}:{settings.method}:{passage.id}")
        query = (
            ict_query(passage.text, rng, settings)
            if settings.method == "ict"
            else crop_query(passage.text, rng, settings)
        )
        if query is None:
            made.skipped_no_sentence += 1
            continue
        made.questions.append(
            TeacherQuestion(
                id=f"{settings.method}:{passage.id}",
                question=query,
                answers=[],
                source=settings.method,
                gold_ids=[passage.document_id],
            )
        )
    return made
