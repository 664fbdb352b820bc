"""PassageRanker and the hybrid's fusion rules."""
