"""Vectors no search can use: all zeros, or holding NaN or an infinity.

An all-zero vector scores 0 against every question by dot product, has no direction for cosine and
sits at the same distance from every unit question by L2: it is never an encoder's output (the
passage embedder refuses empty passages, and every tokenised passage has at least its special
tokens), only a sign of damage, such as a vector file overwritten with zeros. Stores and shard
merges refuse both kinds with one message naming the vector; the check runs over a whole batch at
once."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def unusable_rows(vectors: NDArray[np.floating]) -> NDArray[np.intp]:
    """Positions of the rows of the 2-D ``vectors`` that are all zeros or hold NaN or infinite values."""
    finite = np.isfinite(vectors).all(axis=1)
    nonzero = (vectors != 0).any(axis=1)
    return np.flatnonzero(~(finite & nonzero))


def vector_problem(vector: NDArray[np.floating]) -> str:
    """What is wrong with one row :func:`unusable_rows` named: ``"has NaN or infinite values"``,
    ``"is all zeros"`` or ``"is empty"``."""
    if not vector.size:
        return "is empty"
    return "has NaN or infinite values" if not np.isfinite(vector).all() else "is all zeros"
