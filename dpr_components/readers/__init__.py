"""DPR's extractive reader: span decoding, the ``SpanReader`` component, training and checkpoints.

Modules: ``spans`` (windows, span decoding, offsets), ``inputs`` (model rows), ``model``
(``DPRReader`` checkpoints), ``predict`` (reading one question), ``span_reader`` (the Haystack
component), ``data``/``batches``/``loss``/``training``/``evaluate`` (training)."""

from dpr_components.readers.span_reader import SpanReader

__all__ = ["SpanReader"]
