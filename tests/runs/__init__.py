"""The run mechanics both trainers share."""
