"""Embedder components: the question encoder E_Q and the passage encoder E_P of DPR. Classes load on first use."""

from typing import TYPE_CHECKING

from dpr_components.utils.lazy_package import make_lazy

_import_structure = {
    "passage": ["PassageEmbedder"],
    "question": ["QuestionEmbedder"],
}

if TYPE_CHECKING:
    from dpr_components.embedders.passage import PassageEmbedder as PassageEmbedder
    from dpr_components.embedders.question import QuestionEmbedder as QuestionEmbedder
else:
    # This package is also the old module path dpr_components.embedders.<Class> of pipeline files.
    make_lazy(__name__, __file__, _import_structure, legacy_paths=True)
