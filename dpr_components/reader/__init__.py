"""Old home of the reader, kept so pipeline files naming ``dpr_components.reader.span_reader.SpanReader``
still load; the reader lives in ``dpr_components.readers``."""
