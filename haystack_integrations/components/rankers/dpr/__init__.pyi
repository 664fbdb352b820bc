from dpr_components.rankers.hybrid import HybridRanker as HybridRanker
from dpr_components.rankers.passage_ranker import PassageRanker as PassageRanker
