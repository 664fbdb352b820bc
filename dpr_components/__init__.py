"""Dense Passage Retrieval (Karpukhin et al., 2020) as Haystack 3 components."""

from importlib import metadata

try:
    __version__ = metadata.version("dpr-components")  # pyproject.toml is the one place the version is written
except metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "unknown"
