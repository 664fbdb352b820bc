"""Question (E_Q) and passage (E_P) embedders of a DPR encoder pair. Each class loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "passage_embedder": ["PassageEmbedder"],
    "question_embedder": ["QuestionEmbedder"],
}

if TYPE_CHECKING:
    from .passage_embedder import PassageEmbedder as PassageEmbedder
    from .question_embedder import QuestionEmbedder as QuestionEmbedder
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
