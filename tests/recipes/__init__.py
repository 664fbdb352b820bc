"""The training/ scripts: recipes, choosing scripts, reports and model cards."""
