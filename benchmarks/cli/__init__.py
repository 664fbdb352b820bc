"""The command line's time to first answer."""
