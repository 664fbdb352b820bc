"""Ranker components: the DPR hybrid of BM25 and dense scores (and reciprocal rank fusion). Classes load on first use."""

from typing import TYPE_CHECKING

from dpr_components.utils.lazy_package import make_lazy

_import_structure = {
    "hybrid": ["HybridRanker"],
}

if TYPE_CHECKING:
    from dpr_components.rankers.hybrid import HybridRanker as HybridRanker
else:
    make_lazy(__name__, __file__, _import_structure)
