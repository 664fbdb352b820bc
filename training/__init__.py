"""Training commands and recipes, run from the repository root: ``python -m training.<name>``."""
