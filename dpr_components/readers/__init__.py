"""DPR's extractive reader engine: span decoding (``spans``), model rows (``inputs``), ``DPRReader``
checkpoints (``model``), reading one question (``predict``), answer merging and no-answer. The
component is ``haystack_integrations.components.readers.dpr.span_reader.SpanReader``."""
