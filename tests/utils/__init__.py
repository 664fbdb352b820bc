"""Shared utilities: line files, output folders, data sources, thread settings."""
