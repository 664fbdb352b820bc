"""Dense Passage Retrieval (Karpukhin et al., 2020) as Haystack 3 components."""

__version__ = "0.2.0"
