"""Top-k answer accuracy from first-hit ranks (``dpr_components.evaluation.retrieval_metrics``), and how much
two rankings agree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dpr_components.evaluation.retrieval_metrics import top_k_accuracy_from_ranks

CUTOFFS = (1, 5, 20, 100)


def top_k_accuracy(first_hits: Sequence[int | None], cutoffs: Sequence[int] = CUTOFFS) -> dict[str, float]:
    """Percentage of questions with an answer-bearing passage within the top k, keyed ``top<k>``."""
    if not first_hits:
        return {f"top{k}": float("nan") for k in cutoffs}
    return {f"top{k}": value for k, value in top_k_accuracy_from_ranks(list(first_hits), list(cutoffs)).items()}


def ranking_agreement(a: Mapping[str, Sequence[str]], b: Mapping[str, Sequence[str]], depth: int) -> dict[str, float]:
    """Over shared questions: share with the same top-1 passage, and mean overlap of the top ``depth``."""
    shared = sorted(set(a) & set(b))
    if not shared:
        return {"questions": 0, "same_top1": float("nan"), f"overlap_at_{depth}": float("nan")}
    same_top1 = sum(1 for q in shared if a[q][:1] == b[q][:1])
    overlap = 0.0
    for q in shared:
        x, y = set(a[q][:depth]), set(b[q][:depth])
        overlap += len(x & y) / max(len(x), len(y), 1)
    return {
        "questions": len(shared),
        "same_top1": 100.0 * same_top1 / len(shared),
        f"overlap_at_{depth}": 100.0 * overlap / len(shared),
    }
