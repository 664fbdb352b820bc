"""Encoder loading, plain-torch BERT inference, the OpenVINO back end, encoder pairing."""
