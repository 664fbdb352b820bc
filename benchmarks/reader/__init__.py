"""The span reader: accuracy, end-to-end QA, latency, decoding."""
