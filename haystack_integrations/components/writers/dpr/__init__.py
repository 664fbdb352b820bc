"""PassageWriter: writes embedded passages to a store, with its encoder stamped. Loaded on first use."""

from dpr_components.utils.published import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__)
