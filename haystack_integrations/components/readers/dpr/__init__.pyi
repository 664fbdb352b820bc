from dpr_components.readers.span_reader import SpanReader as SpanReader
