"""Corpus reading, passage splitting, sharded indexing (in process and on Ray)."""
