"""DPRTrainer: trains a DPR question/passage encoder pair from question-passage data. Each class loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "dpr_trainer": ["DPRTrainer"],
}

if TYPE_CHECKING:
    from .dpr_trainer import DPRTrainer as DPRTrainer
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
