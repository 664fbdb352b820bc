"""The embedded document store (``embedded``: SQLite documents, FAISS vectors and a BM25 index in one
folder) and its parts."""
