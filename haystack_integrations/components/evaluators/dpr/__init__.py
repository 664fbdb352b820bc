"""The DPR paper's metrics: top-k retrieval accuracy and MRR, SQuAD exact match and F1. Each class loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "answer_exact_match_f1_evaluator": ["AnswerExactMatchF1Evaluator"],
    "retrieval_accuracy_evaluator": ["RetrievalAccuracyEvaluator"],
}

if TYPE_CHECKING:
    from .answer_exact_match_f1_evaluator import AnswerExactMatchF1Evaluator as AnswerExactMatchF1Evaluator
    from .retrieval_accuracy_evaluator import RetrievalAccuracyEvaluator as RetrievalAccuracyEvaluator
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
