"""The hybrid ranker: BM25 + λ·sim over the union of two candidate lists (§5.1 of the DPR paper), and the
passage ranker: a reader's selection head re-ranking retrieved passages. Each class loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "hybrid_ranker": ["HybridRanker"],
    "passage_ranker": ["PassageRanker"],
}

if TYPE_CHECKING:
    from .hybrid_ranker import HybridRanker as HybridRanker
    from .passage_ranker import PassageRanker as PassageRanker
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
