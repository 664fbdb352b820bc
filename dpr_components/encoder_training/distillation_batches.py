"""Batches for distillation into the question encoder: each question's first-stage candidates as the
store's own passage vectors (no passage is encoded, and an index built with the fixed passage encoder
stays valid), the teacher's logits and which candidates are gold."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from dpr_components.dpr_data.teacher_file import TeacherRecord

PositiveField = Literal["gold", "has_answer"]


@dataclass
class PassageTable:
    """Passage vectors by store id."""

    rows: dict[str, int]
    vectors: np.ndarray

    def lookup(self, ids: Sequence[str], where: str = "") -> np.ndarray:
        """The vectors of ``ids`` in order; a one-line error names the first id the table lacks."""
        missing = next((i for i in ids if i not in self.rows), None)
        if missing is not None:
            raise KeyError(f"{where}passage {missing!r} is not in the store (score the teacher file on this store)")
        return self.vectors[[self.rows[i] for i in ids]]


def store_vectors(store: str | Path, ids: Iterable[str]) -> PassageTable:
    """The vectors the store at ``store`` holds for ``ids`` (the ones it lacks are left out)."""
    from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

    wanted = set(ids)
    documents = [d for d in EmbeddedDocumentStore(path=str(store)).filter_documents() if d.id in wanted]
    with_vectors = [d for d in documents if d.embedding is not None]
    vectors = np.asarray([d.embedding for d in with_vectors], dtype=np.float32)
    return PassageTable({d.id: n for n, d in enumerate(with_vectors)}, vectors.reshape(len(with_vectors), -1))


@dataclass
class CandidateBatch:
    """``B`` questions with ``K`` candidate slots each (shorter lists are padded; ``mask`` is False there).

    ``batch_positives`` / ``batch_mask`` ([B, B*K]) read every candidate of the batch as a column: the
    question's gold ones, and the columns that count (not padding, and not another question's copy of a
    passage among the question's own candidates)."""

    questions: list[str]
    vectors: torch.Tensor
    teacher: torch.Tensor
    mask: torch.Tensor
    batch_positives: torch.Tensor
    batch_mask: torch.Tensor


def _in_batch_masks(
    ids: list[list[str]], mask: torch.Tensor, positives: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    size, slots = mask.shape
    flat_ids = [i for row in ids for i in row + [""] * (slots - len(row))]
    owner = torch.arange(size).repeat_interleave(slots)
    batch_mask = mask.reshape(1, -1).repeat(size, 1)
    batch_positives = torch.zeros_like(batch_mask)
    for question in range(size):
        own = set(ids[question])
        for column, passage in enumerate(flat_ids):
            if owner[column] != question and passage in own:
                batch_mask[question, column] = False
        start = question * slots
        batch_positives[question, start : start + slots] = positives[question]
    return batch_positives, batch_mask


def make_batch(
    records: Sequence[TeacherRecord],
    table: PassageTable,
    positive: PositiveField = "gold",
    retrieval_weight: float = 0.0,
) -> CandidateBatch:
    """The tensors of ``records`` (each with at least one candidate); the teacher's score of a candidate is
    its logit plus ``retrieval_weight`` times its first-stage score (as ``PassageRanker`` ranks)."""
    slots = max(len(r.passage_ids) for r in records)
    dim = table.vectors.shape[1]
    vectors = np.zeros((len(records), slots, dim), dtype=np.float32)
    teacher = torch.zeros(len(records), slots)
    mask = torch.zeros(len(records), slots, dtype=torch.bool)
    positives = torch.zeros(len(records), slots, dtype=torch.bool)
    for n, record in enumerate(records):
        count = len(record.passage_ids)
        vectors[n, :count] = table.lookup(record.passage_ids, f"question {record.id}: ")
        teacher[n, :count] = torch.tensor(record.teacher) + retrieval_weight * torch.tensor(record.retrieval)
        mask[n, :count] = True
        positives[n, :count] = torch.tensor(getattr(record, positive), dtype=torch.bool)
    batch_positives, batch_mask = _in_batch_masks([r.passage_ids for r in records], mask, positives)
    return CandidateBatch(
        [r.question for r in records], torch.from_numpy(vectors), teacher, mask, batch_positives, batch_mask
    )
