"""Old home of the evaluator components, kept so pipeline files naming it still load (removed in
0.3.0: ``dpr_components.legacy.old_paths.REMOVED_IN``)."""

from dpr_components.evaluators import (
    AnswerExactMatchF1Evaluator,
    RetrievalAccuracyEvaluator,
)
from dpr_components.utils.type_paths import register_legacy_paths

__all__ = ["AnswerExactMatchF1Evaluator", "RetrievalAccuracyEvaluator"]

register_legacy_paths(__name__)
