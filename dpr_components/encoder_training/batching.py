"""Build DPR training batches: questions, their candidate passages and the loss mask.

A batch of B questions holds, for each question, its positive and ``negatives`` negatives
taken from ``negative_source`` (Karpukhin et al. 2020, section 3.2 and table 3):

* ``hard``: the example's hard negatives (e.g. mined with BM25), sampled without replacement;
  a question short of them is topped up with random passages so every question has the same
  count (DDP needs equal shapes);
* ``random``: passages drawn from a pool (the corpus if given, else every training passage);
* ``gold``: positives of other training questions.

With ``in_batch`` every question scores every candidate of the batch (in-batch negatives plus
all questions' negatives, shared); without it, each question sees only its own 1 + n
candidates (DPR's "1-of-N"). A candidate identical to a question's positive (two questions
with the same gold passage, a hard negative equal to another question's positive) is masked
out for that question, so it is never pushed away from itself.

Candidates are laid out shard by shard (shard = DDP rank): shard s holds its questions'
positives followed by their negatives. Sampling uses a generator seeded by (seed, epoch,
step), so a resumed run draws the same negatives."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from dpr_components.dpr_data.examples import Ctx, TrainingExample, ctx_key
from dpr_components.evaluation.answer_matching import has_answer

NegativeSource = Literal["hard", "random", "gold"]
NEGATIVE_SOURCES = ("hard", "random", "gold")


@dataclass(frozen=True)
class BatchSettings:
    negatives: int = 1
    negative_source: NegativeSource = "hard"
    in_batch: bool = True
    mask_answer_hits: bool = False
    sample_positive: bool = False

    def __post_init__(self) -> None:
        if self.negatives < 0:
            raise ValueError(f"negatives must be >= 0, got {self.negatives}")
        if self.negative_source not in NEGATIVE_SOURCES:
            raise ValueError(f"negative_source must be one of {NEGATIVE_SOURCES}, got {self.negative_source!r}")
        if not self.in_batch and self.negatives == 0:
            raise ValueError("1-of-N training without in-batch negatives needs negatives >= 1")


@dataclass
class Batch:
    """Questions, candidates (shard-major) and, per question, its positive's index and mask row."""

    questions: list[str]
    passages: list[Ctx]
    positive_index: torch.Tensor
    mask: torch.Tensor
    question_shards: list[slice]
    passage_shards: list[slice]


class BatchBuilder:
    """Makes :class:`Batch` es from examples; deterministic given (seed, epoch, step)."""

    def __init__(
        self,
        examples: Sequence[TrainingExample],
        settings: BatchSettings,
        seed: int = 0,
        random_pool: Sequence[Ctx] | None = None,
    ) -> None:
        if not examples:
            raise ValueError("no training examples")
        self.examples = examples
        self.settings = settings
        self.seed = seed
        if random_pool is None:
            unique = {ctx_key(c): c for e in examples for c in (*e.positives, *e.negatives, *e.hard_negatives)}
            random_pool = list(unique.values())
        if not random_pool:
            raise ValueError("the random negative pool is empty")
        self.random_pool = random_pool

    def build(self, indices: Sequence[int], epoch: int, step: int, shards: int = 1) -> Batch:
        if len(indices) % shards:
            raise ValueError(f"a batch of {len(indices)} questions cannot be split into {shards} equal shards")
        rng = np.random.default_rng([self.seed, epoch, step])
        chosen = [self.examples[i] for i in indices]
        positives = [self._positive(e, rng) for e in chosen]
        negatives = [
            self._negatives(i, e, positives[n], rng) for n, (i, e) in enumerate(zip(indices, chosen, strict=True))
        ]
        per_shard = len(indices) // shards
        passages: list[Ctx] = []
        owner: list[int] = []
        positive_index: list[int] = [0] * len(chosen)
        question_shards, passage_shards = [], []
        for shard in range(shards):
            members = range(shard * per_shard, (shard + 1) * per_shard)
            start = len(passages)
            for q in members:
                positive_index[q] = len(passages)
                passages.append(positives[q])
                owner.append(q)
            for q in members:
                passages.extend(negatives[q])
                owner.extend([q] * len(negatives[q]))
            question_shards.append(slice(members.start, members.stop))
            passage_shards.append(slice(start, len(passages)))
        mask = self._mask(chosen, positives, passages, owner, positive_index)
        return Batch(
            questions=[e.question for e in chosen],
            passages=passages,
            positive_index=torch.tensor(positive_index, dtype=torch.long),
            mask=mask,
            question_shards=question_shards,
            passage_shards=passage_shards,
        )

    def _positive(self, example: TrainingExample, rng: np.random.Generator) -> Ctx:
        if self.settings.sample_positive and len(example.positives) > 1:
            return example.positives[int(rng.integers(len(example.positives)))]
        return example.positives[0]

    def _negatives(self, index: int, example: TrainingExample, positive: Ctx, rng: np.random.Generator) -> list[Ctx]:
        n = self.settings.negatives
        if n == 0:
            return []
        own = ctx_key(positive)
        taken: list[Ctx] = []
        keys = {own}

        def take(candidate: Ctx) -> None:
            key = ctx_key(candidate)
            if key not in keys:
                keys.add(key)
                taken.append(candidate)

        if self.settings.negative_source == "hard":
            pool = example.hard_negatives
            for i in rng.permutation(len(pool)):
                if len(taken) == n:
                    break
                take(pool[int(i)])
        elif self.settings.negative_source == "gold":
            for _ in range(8 * n):
                if len(taken) == n:
                    break
                other = int(rng.integers(len(self.examples)))
                if other != index:
                    take(self.examples[other].positives[0])
        for _ in range(8 * n):  # random source, or topping up the others
            if len(taken) == n:
                break
            take(self.random_pool[int(rng.integers(len(self.random_pool)))])
        if len(taken) < n:
            raise ValueError(
                f"could not find {n} distinct negatives for question {example.id!r}: the pool is too small"
            )
        return taken

    def _mask(
        self,
        chosen: list[TrainingExample],
        positives: list[Ctx],
        passages: list[Ctx],
        owner: list[int],
        positive_index: list[int],
    ) -> torch.Tensor:
        keys = np.array([ctx_key(c) for c in passages], dtype=object)
        owner_array = np.array(owner)
        rows = []
        for q, example in enumerate(chosen):
            row = np.ones(len(passages), dtype=bool) if self.settings.in_batch else owner_array == q
            row &= keys != ctx_key(positives[q])
            if self.settings.mask_answer_hits and example.answers:
                row &= np.array([not has_answer(example.answers, c.text) for c in passages])
            row[positive_index[q]] = True
            rows.append(row)
        return torch.from_numpy(np.stack(rows))
