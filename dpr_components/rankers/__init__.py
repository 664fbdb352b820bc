"""Ranker components: the DPR hybrid of BM25 and dense scores (and reciprocal rank fusion), and the
re-ranking of passages by a model that reads question and passage together. Classes load on first use."""

from typing import TYPE_CHECKING

from dpr_components.utils.lazy_package import make_lazy

_import_structure = {
    "hybrid": ["HybridRanker"],
    "passage_ranker": ["PassageRanker"],
}

if TYPE_CHECKING:
    from dpr_components.rankers.hybrid import HybridRanker as HybridRanker
    from dpr_components.rankers.passage_ranker import PassageRanker as PassageRanker
else:
    make_lazy(__name__, __file__, _import_structure)
