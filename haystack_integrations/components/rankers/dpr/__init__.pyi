from dpr_components.rankers.hybrid import HybridRanker as HybridRanker
