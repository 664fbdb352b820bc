"""Evaluator components: DPR's top-k retrieval accuracy and SQuAD exact match / F1."""

from dpr_components.evaluators.answer_exact_match import AnswerExactMatchF1Evaluator
from dpr_components.evaluators.retrieval_accuracy import RetrievalAccuracyEvaluator

__all__ = ["AnswerExactMatchF1Evaluator", "RetrievalAccuracyEvaluator"]
