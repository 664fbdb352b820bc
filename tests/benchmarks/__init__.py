"""The benchmarks/ scripts' arithmetic and reports."""
