"""DPR dense retrieval, BM25 and their exact hybrid (§5.1 of the DPR paper), over the embedded store,
Elasticsearch or any store with public retrieval methods. Loaded on first use."""

from dpr_components.utils.published import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__)
