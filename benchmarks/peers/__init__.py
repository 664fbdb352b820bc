"""Benchmarks against what users would build from other projects' components with the same weights."""
