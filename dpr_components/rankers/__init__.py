"""Ranker components: the DPR hybrid of BM25 and dense scores (and reciprocal rank fusion). Classes load on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "hybrid": ["HybridRanker"],
}

if TYPE_CHECKING:
    from dpr_components.rankers.hybrid import HybridRanker as HybridRanker
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
