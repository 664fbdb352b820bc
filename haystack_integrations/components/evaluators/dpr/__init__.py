"""The DPR paper's metrics: top-k retrieval accuracy and MRR, SQuAD exact match and F1. Loaded on first use."""

from dpr_components.utils.published import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__)
