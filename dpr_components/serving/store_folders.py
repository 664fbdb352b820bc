"""The store folders ``haystack serve --store`` gives: one for every pipeline, and per pipeline by name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class StoreFolders:
    """The store folders ``haystack serve --store`` gives: one for every pipeline, and per pipeline by name."""

    default: str | None = None
    by_pipeline: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, options: list[str]) -> StoreFolders:
        """From ``--store DIR`` and ``--store NAME=DIR`` options (a ``ValueError`` names a bad one)."""
        default, by_pipeline = None, {}
        for option in options:
            name, separator, folder = option.partition("=")
            if not separator:
                name, folder = "", option
            if not folder.strip():
                raise ValueError(f"--store {option!r}: give a store folder, as --store DIR or --store PIPELINE=DIR")
            if name:
                by_pipeline[name] = folder
            elif default is not None:
                raise ValueError(
                    f"--store {option!r}: one --store DIR for every pipeline; name the others PIPELINE=DIR"
                )
            else:
                default = folder
        return cls(default, by_pipeline)

    def folder_for(self, name: str) -> str | None:
        """The folder that replaces the embedded stores of pipeline ``name``; None to keep its own."""
        return self.by_pipeline.get(name, self.default)
