"""The package as a whole: code health, layout, the built wheel."""
