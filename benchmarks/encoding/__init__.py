"""Passage encoding speed and agreement."""
