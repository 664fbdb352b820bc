"""SpanReader: decoding, no answer, the OpenVINO back end."""
