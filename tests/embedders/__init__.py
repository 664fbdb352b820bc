"""The embedder components."""
