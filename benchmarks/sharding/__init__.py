"""Sharded indexing."""
