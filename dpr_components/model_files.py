"""Check the files of a model folder before transformers reads them, and turn its failures into
one-line errors naming the folder and file.

Transformers reports a damaged ``model.safetensors`` (random bytes, truncated, a header lying
about tensor sizes) or weights of another model (shape mismatch) as tracebacks from safetensors
or torch; here each becomes a :class:`ModelFileError` saying which file of which folder is at
fault. Remote code is never enabled: every loader passes ``trust_remote_code=False``."""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Iterator
from pathlib import Path

# Exceptions transformers and safetensors raise for unreadable or mismatched model files.
LOAD_ERRORS: tuple[type[BaseException], ...] = (
    OSError, ValueError, KeyError, RuntimeError, TypeError, AttributeError, IndexError, EOFError,
    pickle.UnpicklingError,
)


class ModelFileError(ValueError):
    """A model folder's file is missing, damaged or does not fit the folder's configuration."""


def first_line(error: BaseException, limit: int = 200) -> str:
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    return (lines[0] if lines else type(error).__name__)[:limit]


def weight_files(folder: Path) -> list[Path]:
    """The weight files transformers would read (safetensors first, like transformers)."""
    return sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))


def check_weight_files(folder: Path) -> None:
    """Raise :class:`ModelFileError` when a safetensors file of ``folder`` is damaged: its header
    is parsed and every tensor's byte range checked against the file, without reading the data."""
    from safetensors import SafetensorError, safe_open

    for path in sorted(Path(folder).glob("*.safetensors")):
        try:
            with safe_open(str(path), framework="pt") as handle:
                handle.keys()
        except (SafetensorError, OSError, ValueError) as error:
            raise ModelFileError(
                f"weight file {path} is damaged ({first_line(error)}): replace the model folder {folder} with an "
                "intact copy"
            ) from error


def describe_load_error(folder: Path, error: BaseException) -> str:
    """A one-line explanation of why transformers could not load the model in ``folder``."""
    text = first_line(error)
    files = ", ".join(p.name for p in weight_files(folder)) or "no weight file"
    if "mismatched_sizes" in str(error) or "size mismatch" in str(error):
        return (
            f"the weights in {folder} ({files}) do not fit the architecture its config.json describes (tensor "
            "shapes differ: weights of another model?)"
        )
    if isinstance(error, pickle.UnpicklingError):
        return f"the weight file of {folder} ({files}) was not loaded: reading it would run code stored in it"
    return f"cannot load the model weights in {folder} ({files}): {text}"


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """No progress bars and no load report: missing weights are checked and reported by the caller."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()
    try:
        yield
    finally:
        transformers_logging.set_verbosity(verbosity)
