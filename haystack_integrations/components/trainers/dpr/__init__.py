"""DPRTrainer: trains a DPR question/passage encoder pair from question-passage data; QuestionEncoderAdapter: adapts
the question encoder to a store's passages without questions. Each class loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "dpr_trainer": ["DPRTrainer"],
    "question_encoder_adapter": ["QuestionEncoderAdapter"],
}

if TYPE_CHECKING:
    from .dpr_trainer import DPRTrainer as DPRTrainer
    from .question_encoder_adapter import QuestionEncoderAdapter as QuestionEncoderAdapter
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
