"""Evaluator components: DPR's top-k retrieval accuracy and SQuAD exact match / F1. Classes load on first use."""

from typing import TYPE_CHECKING

from dpr_components.utils.lazy_package import make_lazy

_import_structure = {
    "answer_exact_match": ["AnswerExactMatchF1Evaluator"],
    "retrieval_accuracy": ["RetrievalAccuracyEvaluator"],
}

if TYPE_CHECKING:
    from dpr_components.evaluators.answer_exact_match import (
        AnswerExactMatchF1Evaluator as AnswerExactMatchF1Evaluator,
    )
    from dpr_components.evaluators.retrieval_accuracy import (
        RetrievalAccuracyEvaluator as RetrievalAccuracyEvaluator,
    )
else:
    make_lazy(__name__, __file__, _import_structure)
