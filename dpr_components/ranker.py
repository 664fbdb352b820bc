"""Old home of ``HybridRanker``, kept so pipeline files naming it still load."""

from dpr_components.legacy_paths import register_legacy_paths
from dpr_components.rankers.hybrid import HybridRanker

__all__ = ["HybridRanker"]

register_legacy_paths(HybridRanker)
