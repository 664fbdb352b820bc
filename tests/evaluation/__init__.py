"""Evaluation: answer matching, metrics, intervals, the eval pipelines."""
