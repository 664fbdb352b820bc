"""BM25: the embedded index against Lucene (Pyserini) and Haystack's InMemory store."""
