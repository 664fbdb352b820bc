"""Embedder components: the question encoder E_Q and the passage encoder E_P of DPR. Classes load on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

from dpr_components.legacy.type_paths import register_legacy_paths

_import_structure = {
    "passage": ["PassageEmbedder"],
    "question": ["QuestionEmbedder"],
}

if TYPE_CHECKING:
    from dpr_components.embedders.passage import PassageEmbedder as PassageEmbedder
    from dpr_components.embedders.question import QuestionEmbedder as QuestionEmbedder
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)

# This package is also the old module path dpr_components.embedders.<Class> of pipeline files.
register_legacy_paths(__name__)
