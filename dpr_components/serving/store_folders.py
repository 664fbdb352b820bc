"""The store folders ``haystack serve --store`` gives: one for every pipeline, and per pipeline by name,
checked before anything is served: a name must be one of the served pipelines that have a store, and a
folder must be a store's, an empty one, or not exist yet (the first index request creates it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dpr_components.utils.output_folders import EMPTY, OTHER, STORE, folder_kind

STORE_HINT = "give the folder of a store (made by haystack run index --store DIR) or a new folder"


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

    def check(self, files: Iterable[Path]) -> None:
        """Refuse (``ValueError``, one line) a ``NAME=DIR`` whose NAME is none of the pipeline ``files``
        with an embedded store, and a folder that is a file or holds files of another kind than a store."""
        with_stores = sorted(path.stem for path in files if _has_embedded_store(path))
        for name, folder in self.by_pipeline.items():
            if name not in with_stores:
                names = ", ".join(with_stores) or "none"
                raise ValueError(
                    f"--store {name}={folder}: {name!r} is not one of the served pipelines with a store folder: {names}"
                )
        for option, folder in self._options():
            problem = folder_problem(folder)
            if problem is not None:
                raise ValueError(f"--store {option}: {problem}; {STORE_HINT}")

    def _options(self) -> list[tuple[str, str]]:
        """Each folder given, with the option as written."""
        given = [(self.default, self.default)] if self.default is not None else []
        return given + [(f"{name}={folder}", folder) for name, folder in self.by_pipeline.items()]


def _has_embedded_store(path: Path) -> bool:
    # Deferred: the command line imports this module to parse --store, before any heavy library.
    from dpr_components.pipeline_files.loading import PipelineFileError, embedded_store_folders, load_pipeline_spec

    try:
        return bool(embedded_store_folders(load_pipeline_spec(path)["components"]))
    except (PipelineFileError, OSError):
        return False  # a file that cannot be read is reported as not served, with its reason


def folder_problem(folder: str) -> str | None:
    """Why ``folder`` cannot be a store folder to serve, or ``None``: a store's, an empty folder, or none yet."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        return f"{folder} is a file, not a folder"
    try:
        kind = folder_kind(path)
    except OSError as error:
        return f"cannot read the folder {folder} ({error.strerror or error})"
    if kind in (None, EMPTY, STORE):
        return None
    what = "files of another program" if kind == OTHER else f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
    return f"{folder} holds {what}, not a document store (no documents.sqlite)"
