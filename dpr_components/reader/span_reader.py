"""Old home of ``SpanReader``, kept so pipeline files naming it still load."""

from dpr_components.legacy_paths import register_legacy_paths
from dpr_components.readers.span_reader import SpanReader

__all__ = ["SpanReader"]

register_legacy_paths(SpanReader)
