"""Latency of a question under load: beside a background encoder and with concurrent clients."""
