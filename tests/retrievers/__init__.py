"""The retrievers and the hybrid on our store and on others."""
