"""Segments of a BM25 index: term-major raw term frequencies of a set of documents.

A segment is written once and then only loses documents: removing (or replacing) a document
flips its slot's ``live`` flag and its postings are skipped until segments are merged. Merging
rewrites the live postings of several segments into one (Lucene's segment merging)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

_EMPTY_INT = np.empty(0, dtype=np.int32)
_EMPTY_TF = np.empty(0, dtype=np.float32)


@dataclass
class Segment:
    """Postings of term ``t``: ``slots[indptr[t]:indptr[t + 1]]`` with counts ``tf[...]``.

    A slot is a document of the segment; ``positions[slot]`` is its position in the index
    (``positions`` is None when slot and position coincide, as in a merged main segment)."""

    indptr: np.ndarray  # int64, one more than the terms the segment knows
    slots: np.ndarray  # int32
    tf: np.ndarray  # float32 (exact integer counts; bm25s scores float32 counts)
    positions: np.ndarray | None  # int64 per slot
    live: np.ndarray  # bool per slot
    stale: int = 0  # slots killed since the segment was written (their postings are still here)

    @property
    def num_terms(self) -> int:
        return len(self.indptr) - 1

    @property
    def num_slots(self) -> int:
        return len(self.live)

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        """Positions and counts of ``term`` in the segment's live documents."""
        if term >= self.num_terms:
            return _EMPTY_INT, _EMPTY_TF
        start, end = self.indptr[term], self.indptr[term + 1]
        slots, tf = self.slots[start:end], self.tf[start:end]
        if self.stale and len(slots):
            keep = self.live[slots]
            slots, tf = slots[keep], tf[keep]
        return (slots if self.positions is None else self.positions[slots]), tf

    def kill(self, slots: np.ndarray) -> None:
        self.live[slots] = False
        self.stale += len(slots)

    def with_own_flags(self) -> Segment:
        """A copy sharing the (never modified) postings, with its own ``live`` flags."""
        return replace(self, live=self.live.copy())


def empty_segment(num_slots: int = 0) -> Segment:
    return Segment(np.zeros(1, dtype=np.int64), _EMPTY_INT, _EMPTY_TF, None, np.zeros(num_slots, dtype=np.bool_))


def segment_from_terms(
    term_ids: np.ndarray, lengths: np.ndarray, num_terms: int, positions: np.ndarray | None
) -> Segment:
    """A segment of documents given as their concatenated term ids and their lengths (in terms)."""
    num_docs = len(lengths)
    doc_ptr = np.zeros(num_docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=doc_ptr[1:])
    by_doc = sp.csr_matrix((np.ones(len(term_ids), dtype=np.float32), term_ids, doc_ptr), shape=(num_docs, num_terms))
    by_doc.sum_duplicates()  # repeated terms of a document become its term frequency
    return _segment(by_doc.tocsc(), positions, num_docs)


def _segment(by_term: sp.spmatrix, positions: np.ndarray | None, num_slots: int) -> Segment:
    """A segment, every slot live, from a term-compressed matrix (indptr per term, indices = slots)."""
    return Segment(
        indptr=by_term.indptr.astype(np.int64),
        slots=by_term.indices.astype(np.int32),
        tf=by_term.data.astype(np.float32),
        positions=positions,
        live=np.ones(num_slots, dtype=np.bool_),
    )


def merge_segments(segments: Sequence[Segment], num_terms: int, num_positions: int | None) -> Segment:
    """One segment holding the live postings of ``segments``.

    With ``num_positions`` the result is a main segment (slot = position, ``num_positions``
    slots, every slot live; callers set the flags of removed positions). Without it, its slots
    are the live positions of ``segments`` in increasing order."""
    terms, positions, counts = [], [], []
    for segment in segments:
        per_term = np.diff(segment.indptr)
        term_of = np.repeat(np.arange(segment.num_terms, dtype=np.int32), per_term)
        slots, tf = segment.slots, segment.tf
        if segment.stale:
            keep = segment.live[slots]
            term_of, slots, tf = term_of[keep], slots[keep], tf[keep]
        terms.append(term_of)
        positions.append(slots.astype(np.int64) if segment.positions is None else segment.positions[slots])
        counts.append(tf)
    term_of = np.concatenate(terms) if terms else _EMPTY_INT
    position_of = np.concatenate(positions) if positions else np.empty(0, dtype=np.int64)
    tf = np.concatenate(counts) if counts else _EMPTY_TF
    if num_positions is not None:
        slot_of, slot_positions, num_slots = position_of, None, num_positions
    else:
        slot_positions = np.unique(position_of)
        slot_of, num_slots = np.searchsorted(slot_positions, position_of), len(slot_positions)
    by_term = sp.csr_matrix((tf, (term_of, slot_of)), shape=(num_terms, num_slots))
    by_term.sort_indices()
    return _segment(by_term, slot_positions, num_slots)
