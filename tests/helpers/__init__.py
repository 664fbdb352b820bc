"""Helpers shared by test modules: tiny models, small corpora, the reader training run (fixtures are in conftest.py)."""
