"""Old home of ``HybridRanker``, kept so pipeline files naming it still load (removed in 0.3.0:
``dpr_components.legacy.old_paths.REMOVED_IN``)."""

from dpr_components.rankers.hybrid import HybridRanker
from dpr_components.utils.type_paths import register_legacy_paths

__all__ = ["HybridRanker"]

register_legacy_paths(__name__)
