"""EmbeddedDocumentStore: BM25 and dense indexes, files, Haystack's store contract, the drop-in matrix, Elasticsearch."""
