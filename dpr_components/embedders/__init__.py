"""Embedder components: the question encoder E_Q and the passage encoder E_P of DPR."""

from dpr_components.embedders.passage import PassageEmbedder
from dpr_components.embedders.question import QuestionEmbedder
from dpr_components.legacy_paths import register_legacy_paths

__all__ = ["PassageEmbedder", "QuestionEmbedder"]

# This package is also the old module path dpr_components.embedders.<Class> of pipeline files.
register_legacy_paths(PassageEmbedder, QuestionEmbedder)
