"""DPRPassageSplitter: documents cut into DPR's 100-word passages. Loaded on first use."""

from dpr_components.utils.published import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__)
