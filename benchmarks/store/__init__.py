"""What writes to the store cost."""
