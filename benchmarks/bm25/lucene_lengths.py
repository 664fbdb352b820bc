"""Ablation: how much of the ranking difference from Lucene comes from document lengths.

Lucene stores each document's length in one byte (``SmallFloat.intToByte4``: exact below 24,
then 3 significant bits), and BM25Similarity scores with the decoded length; bm25s uses the
exact length. Scoring with Lucene's rounding shows how close the rankings get without it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

# Lengths below this are stored exactly (255 minus the 4-bit code of Integer.MAX_VALUE).
_EXACT_BELOW = 24


def _to_int4(value: int) -> int:
    bits = value.bit_length()
    if bits < 4:
        return value
    shift = bits - 4
    return ((value >> shift) & 0x07) | ((shift + 1) << 3)


def _from_int4(code: int) -> int:
    mantissa, shift = code & 0x07, (code >> 3) - 1
    return mantissa if shift == -1 else (mantissa | 0x08) << shift


def lucene_length(length: int) -> int:
    """The document length Lucene's BM25 sees after storing ``length`` in one byte."""
    if length < _EXACT_BELOW:
        return length
    return _EXACT_BELOW + _from_int4(_to_int4(length - _EXACT_BELOW))


def top1_agreement(
    doc_terms: Sequence[list[str]],
    doc_ids: Sequence[str],
    query_terms: Mapping[str, list[str]],
    lucene_top1: Mapping[str, str],
    k1: float = 0.9,
    b: float = 0.4,
) -> dict[str, float]:
    """Share of queries (%) whose best passage equals Lucene's, scoring with exact and with Lucene-rounded lengths."""
    n = len(doc_terms)
    lengths = np.array([len(terms) for terms in doc_terms], dtype=np.float64)
    average = lengths.sum() / n
    postings: dict[str, list[tuple[int, int]]] = {}
    for position, terms in enumerate(doc_terms):
        for term, tf in Counter(terms).items():
            postings.setdefault(term, []).append((position, tf))
    arrays = {
        term: (np.array([p for p, _ in ps]), np.array([f for _, f in ps], dtype=np.float64))
        for term, ps in postings.items()
    }
    rounded = np.array([lucene_length(int(x)) for x in lengths], dtype=np.float64)
    result = {}
    for name, dl in (("exact_lengths", lengths), ("lucene_lengths", rounded)):
        norm = k1 * (1 - b + b * dl / average)
        same = 0
        for qid, terms in query_terms.items():
            scores = np.zeros(n)
            for term in terms:
                if term in arrays:
                    docs, tf = arrays[term]
                    idf = np.log(1 + (n - len(docs) + 0.5) / (len(docs) + 0.5))
                    scores[docs] += idf * tf / (tf + norm[docs])
            best = doc_ids[int(np.argmax(scores))] if scores.max() > 0 else None
            same += best == lucene_top1.get(qid)
        result[name] = 100.0 * same / len(query_terms)
    return result
