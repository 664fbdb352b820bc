"""Evaluator components: DPR's top-k retrieval accuracy and SQuAD exact match / F1. Classes load on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

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
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
