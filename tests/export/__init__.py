"""Exported encoders and readers in Haystack's own components."""
