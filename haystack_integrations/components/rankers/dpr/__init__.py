"""The hybrid ranker: BM25 + λ·sim over the union of two candidate lists (§5.1 of the DPR paper), and the
passage ranker: a reader's selection head re-ranking retrieved passages. Loaded on first use."""

from dpr_components.utils.published import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__)
