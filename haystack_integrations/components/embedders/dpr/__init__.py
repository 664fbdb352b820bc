"""Question (E_Q) and passage (E_P) embedders of a DPR encoder pair. Loaded on first use."""

from dpr_components.utils.published import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__)
