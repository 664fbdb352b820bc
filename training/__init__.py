"""Training commands and recipes, run from the repository root: ``python -m training.<subject>.<name>``, with
the subjects ``retriever`` (the DPR encoders), ``reader`` (the span reader and its pipelines) and ``common``
(what both use)."""
