"""Recipes of the span reader and its pipelines: training, the no-answer fit, the re-rank choices."""
