"""Helpers shared by test modules: tiny models, small corpora, command arguments over the packaged pipelines,
repository paths, served pipelines and tiny training runs (fixtures are in conftest.py)."""
