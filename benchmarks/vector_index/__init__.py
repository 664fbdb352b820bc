"""FAISS index types for the dense store."""
