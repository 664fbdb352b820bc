"""Ranker components: the DPR hybrid of BM25 and dense scores (and reciprocal rank fusion)."""

from dpr_components.rankers.hybrid import HybridRanker

__all__ = ["HybridRanker"]
