"""The span reader of the DPR paper (§6): passage selection and answer spans. Loaded on first use."""

from dpr_components.utils.published import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__)
