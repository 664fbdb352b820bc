"""One vocabulary for question-passage similarity, shared by the stores and the trainers.

The names are Haystack's (``dot_product``, ``cosine``) plus ``l2``; ``dot``, the DPR paper's word
(section 6.3) and the training settings' spelling since the first release, means ``dot_product``
everywhere. Each side keeps the spelling it was given (training run names and fingerprints stay as
they were) and compares through :func:`canonical_similarity`."""

from __future__ import annotations

from typing import Literal, cast

Similarity = Literal["dot_product", "cosine", "l2"]
SIMILARITIES: tuple[Similarity, ...] = ("dot_product", "cosine", "l2")
ALIASES: dict[str, Similarity] = {"dot": "dot_product"}
ACCEPTED = (*SIMILARITIES, *ALIASES)


def canonical_similarity(name: object, setting: str = "similarity") -> Similarity:
    """``name`` as one of :data:`SIMILARITIES`; a one-line error naming ``setting`` for anything else."""
    if isinstance(name, str) and name in ALIASES:
        return ALIASES[name]
    if isinstance(name, str) and name in SIMILARITIES:
        return cast(Similarity, name)
    raise ValueError(f"{setting} must be one of {', '.join(ACCEPTED)}, got {name!r}")
