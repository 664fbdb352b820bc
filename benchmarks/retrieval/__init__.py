"""Retrieval accuracy and speed on the pool."""
