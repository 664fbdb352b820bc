"""Conformance with Haystack's document store tests and drop-in use."""
