"""Old home of ``DPRTrainer``, kept so pipeline files naming it still load (removed in 0.3.0:
``dpr_components.legacy.old_paths.REMOVED_IN``)."""

from dpr_components.encoder_training.component import DPRTrainer
from dpr_components.utils.type_paths import register_legacy_paths

__all__ = ["DPRTrainer"]

register_legacy_paths(__name__)
