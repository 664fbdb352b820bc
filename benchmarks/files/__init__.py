"""Indexing a folder of documents: our index_files pipeline against Haystack's own converters."""
