"""The store at growing corpus sizes."""
