"""BM25 formulas of bm25s's variants, evaluated at query time from raw term frequencies.

bm25s bakes IDF, average length and length norms into a score matrix when it indexes; here the
same quantities are computed per query from the current collection, with the same arithmetic
(float32 IDF, float64 term-frequency components, float32 partial scores), so a query scores
exactly as a bm25s index built from scratch over the same documents would."""

from __future__ import annotations

import math

import numpy as np

METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
# Methods that give every document a score for a query term it lacks (bm25s's non-occurrence array).
NONOCCURRENCE_METHODS = ("bm25l", "bm25+")
DELTA = 0.5  # bm25s's default delta of BM25L and BM25+


def idf(method: str, df: int, n: int) -> float:
    """Inverse document frequency of a term in ``df`` of ``n`` documents (float64, as bm25s)."""
    if method == "lucene":
        return math.log(1 + (n - df + 0.5) / (df + 0.5))
    if method == "robertson":
        return math.log(max((n - df + 0.5) / (df + 0.5), 1))
    if method == "atire":
        return math.log(n / df)
    if method == "bm25l":
        return math.log((n + 1) / (df + 0.5))
    return math.log((n + 1) / df)  # bm25+


def length_norms(method: str, doc_lengths: np.ndarray, avgdl: float, k1: float, b: float) -> np.ndarray:
    """Per-document length term of the TF component: ``k1 (1 - b + b dl / avgdl)``, or for BM25L
    the bare ``1 - b + b dl / avgdl`` (float64, same operation order as bm25s)."""
    factor = (1 - b) + b * doc_lengths / np.float64(avgdl)
    return factor if method == "bm25l" else k1 * factor


def tf_component(method: str, tf: np.ndarray, norms: np.ndarray, k1: float) -> np.ndarray:
    """The TF component of each posting; ``tf`` is float32 (as bm25s's counts), ``norms`` the
    :func:`length_norms` of the posting's document."""
    if method in ("lucene", "robertson"):
        return tf / (norms + tf)
    if method == "atire":
        return (tf * (k1 + 1)) / (tf + norms)
    if method == "bm25l":
        c = tf / norms
        return ((k1 + 1) * (c + DELTA)) / (k1 + c + DELTA)
    return ((k1 + 1) * tf) / (norms + tf) + DELTA  # bm25+


def nonoccurrence(method: str, term_idf: float, k1: float) -> np.float32:
    """What every document gets for a query term it lacks (zero but for BM25L and BM25+): the
    term's IDF times the TF component of a zero count at average length."""
    if method == "bm25l":
        return np.float32(term_idf * (((k1 + 1) * DELTA) / (k1 + DELTA)))
    if method == "bm25+":
        return np.float32(term_idf * DELTA)
    return np.float32(0.0)


def partial_scores(method: str, tf: np.ndarray, norms: np.ndarray, idfs: np.ndarray, k1: float) -> np.ndarray:
    """Float32 partial scores of postings with counts ``tf``, their documents' :func:`length_norms`
    and their term's float64 :func:`idf`, minus the term's :func:`nonoccurrence` (as bm25s stores them)."""
    scores = idfs.astype(np.float32) * tf_component(method, tf, norms, k1)
    if method in NONOCCURRENCE_METHODS:
        scores -= nonoccurrence_of(method, idfs, k1)
    return scores.astype(np.float32)


def nonoccurrence_of(method: str, idfs: np.ndarray, k1: float) -> np.ndarray:
    """:func:`nonoccurrence` of many float64 IDFs at once (float32)."""
    if method not in NONOCCURRENCE_METHODS:
        return np.zeros(len(idfs), dtype=np.float32)
    factor = ((k1 + 1) * DELTA) / (k1 + DELTA) if method == "bm25l" else DELTA
    return (idfs * factor).astype(np.float32)
