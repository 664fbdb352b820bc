"""The reliability suite's report."""
