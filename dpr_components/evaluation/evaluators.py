"""Old home of the evaluator components, kept so pipeline files naming it still load."""

from dpr_components.evaluators import AnswerExactMatchF1Evaluator, RetrievalAccuracyEvaluator
from dpr_components.legacy_paths import register_legacy_paths

__all__ = ["AnswerExactMatchF1Evaluator", "RetrievalAccuracyEvaluator"]

register_legacy_paths(AnswerExactMatchF1Evaluator, RetrievalAccuracyEvaluator)
