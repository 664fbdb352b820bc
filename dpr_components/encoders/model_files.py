"""Check the files of a model folder before transformers reads them, and turn its failures into
one-line errors naming the folder and file.

Transformers reports a damaged ``model.safetensors`` (random bytes, truncated, a header lying
about tensor sizes) or weights of another model (shape mismatch) as tracebacks from safetensors
or torch; here each becomes a :class:`ModelFileError` saying which file of which folder is at
fault. Remote code is never enabled: every loader passes ``trust_remote_code=False``.

Before a model is built, its ``config.json`` sizes are checked to be positive and bounded
(:data:`CONFIG_LIMITS`) and to agree with the tensor names and shapes of its safetensors files
(read from their headers, no tensor loaded): a config claiming a million layers would
otherwise make transformers allocate until memory runs out. After loading, weights holding
NaN or infinity (a run that diverged) are refused by :func:`check_finite_weights`."""

from __future__ import annotations

import contextlib
import hashlib
import json
import pickle
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from dpr_components.utils.validation import short_repr

# Exceptions transformers and safetensors raise for unreadable or mismatched model files.
# BertConfig fields a DPR config carries (the rest are DPR's own): what a reader started from a plain
# encoder, and an encoder exported as plain BERT, take over.
BERT_CONFIG_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "initializer_range",
    "layer_norm_eps",
    "pad_token_id",
)


def bert_config_settings(config: Any) -> dict[str, Any]:
    """The :data:`BERT_CONFIG_FIELDS` a transformers config has, with their values."""
    return {name: getattr(config, name) for name in BERT_CONFIG_FIELDS if hasattr(config, name)}


LOAD_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    ValueError,
    KeyError,
    RuntimeError,
    TypeError,
    AttributeError,
    IndexError,
    EOFError,
    pickle.UnpicklingError,
)


# The largest value a config.json may give each size (aliases: DistilBERT's names). Generous: the
# largest BERT-style encoders have 48 layers, hidden size 8,192 and 250,002 tokens.
CONFIG_LIMITS: dict[str, int] = {
    "num_hidden_layers": 256,
    "hidden_size": 32_768,
    "intermediate_size": 131_072,
    "num_attention_heads": 1_024,
    "vocab_size": 1_048_576,
    "max_position_embeddings": 131_072,
    "n_layers": 256,
    "dim": 32_768,
    "hidden_dim": 131_072,
    "n_heads": 1_024,
}
# Weight names that give a size away (BERT's, inside DPR and reader prefixes): config field -> (tensor, axis).
_SIZE_TENSORS: dict[str, tuple[str, int]] = {
    "vocab_size": ("embeddings.word_embeddings.weight", 0),
    "max_position_embeddings": ("embeddings.position_embeddings.weight", 0),
    "hidden_size": ("encoder.layer.0.attention.self.query.weight", 0),
    "intermediate_size": ("encoder.layer.0.intermediate.dense.weight", 0),
}
_LAYER_NAME = re.compile(r"(?:^|\.)encoder\.layer\.(\d+)\.")


class ModelFileError(ValueError):
    """A model folder's file is missing, damaged or does not fit the folder's configuration."""


def first_line(error: BaseException, limit: int = 200) -> str:
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    return (lines[0] if lines else type(error).__name__)[:limit]


def weight_files(folder: Path) -> list[Path]:
    """The weight files transformers would read (safetensors first, like transformers)."""
    return sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))


def weight_shapes(folder: Path) -> dict[str, tuple[int, ...]]:
    """Name and shape of every tensor in the safetensors files of ``folder``, read from their headers
    (every tensor's byte range is checked against its file, no data is read); a damaged file is a
    :class:`ModelFileError`."""
    from safetensors import SafetensorError, safe_open

    shapes: dict[str, tuple[int, ...]] = {}
    for path in sorted(Path(folder).glob("*.safetensors")):
        try:
            with safe_open(str(path), framework="pt") as handle:
                for name in handle.keys():  # noqa: SIM118 - safe_open's handle is not a mapping
                    shapes[name] = tuple(handle.get_slice(name).get_shape())
        except (SafetensorError, OSError, ValueError) as error:
            raise ModelFileError(
                f"weight file {path} is damaged ({first_line(error)}): replace the model folder {folder} with an "
                "intact copy"
            ) from error
    return shapes


def _bin_shapes(folder: Path) -> dict[str, tuple[int, ...]]:
    """Name and shape of every tensor in ``folder``'s ``*.bin`` files (read when there is no safetensors
    file, as transformers does), memory-mapped so no data is read; empty when a file cannot be read
    that way (the loader reports it)."""
    import torch

    shapes: dict[str, tuple[int, ...]] = {}
    for path in sorted(Path(folder).glob("*.bin")):
        try:
            state = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
        except Exception:  # noqa: BLE001 - legacy, damaged or code-running files: transformers' load says which
            return {}
        if not isinstance(state, Mapping):
            return {}
        shapes.update({str(k): tuple(v.shape) for k, v in state.items() if isinstance(v, torch.Tensor)})
    return shapes


def check_model_files(folder: Path) -> None:
    """Check ``folder`` before a model is built from it: intact safetensors files, and a ``config.json``
    whose sizes are bounded and fit the weights' tensor names and shapes (see the module docstring)."""
    folder = Path(folder)
    shapes = weight_shapes(folder) or _bin_shapes(folder)
    config = _read_config(folder / "config.json")
    if config is None:
        return  # missing or unreadable: the loaders report it
    _check_config_sizes(folder / "config.json", config)
    if shapes:
        _check_config_fits_weights(folder, config, shapes)


def _read_config(path: Path) -> dict[str, Any] | None:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return config if isinstance(config, dict) else None


def _check_config_sizes(path: Path, config: Mapping[str, Any]) -> None:
    """Every size of :data:`CONFIG_LIMITS` that ``config`` gives is an integer from 1 to its limit."""
    for name, limit in CONFIG_LIMITS.items():
        if name not in config:
            continue
        value = config[name]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
            raise ModelFileError(f"{path}: {name} must be an integer from 1 to {limit:,}, got {short_repr(value, 40)}")
    hidden, heads = config.get("hidden_size"), config.get("num_attention_heads")
    if isinstance(hidden, int) and isinstance(heads, int) and hidden % heads:
        raise ModelFileError(f"{path}: hidden_size {hidden} is not a multiple of num_attention_heads {heads}")


def _tensor_ending(shapes: Mapping[str, tuple[int, ...]], suffix: str) -> str | None:
    return next((name for name in shapes if name == suffix or name.endswith("." + suffix)), None)


def _check_config_fits_weights(folder: Path, config: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]]) -> None:
    """The layer count and the sizes BERT's weight names give away agree with ``config``."""
    files = ", ".join(p.name for p in weight_files(folder))
    mismatch = f"the weights in {folder} ({files}) do not fit the architecture its config.json describes"
    layers = {int(match.group(1)) for name in shapes if (match := _LAYER_NAME.search(name))}
    for field in ("num_hidden_layers", "n_layers"):
        claimed = config.get(field)
        if not isinstance(claimed, int):
            continue
        if layers and max(layers) + 1 != claimed:
            raise ModelFileError(f"{mismatch} ({field} is {claimed:,}, the weights hold {max(layers) + 1:,} layers)")
        if claimed > len(shapes):  # each layer has tensors of its own, whatever their names
            raise ModelFileError(f"{mismatch} ({field} is {claimed:,}, the weights hold {len(shapes):,} tensors)")
    for field, (suffix, axis) in _SIZE_TENSORS.items():
        name, claimed = _tensor_ending(shapes, suffix), config.get(field)
        if name is None or not isinstance(claimed, int) or len(shapes[name]) <= axis:
            continue
        if shapes[name][axis] != claimed:
            raise ModelFileError(f"{mismatch} ({field} is {claimed:,}, {name} has {shapes[name][axis]:,})")


def non_finite_tensor(tensors: Mapping[str, Any]) -> str | None:
    """The name of the first floating-point tensor of ``tensors`` holding NaN or infinity, or None."""
    import torch

    with torch.no_grad():
        for name, tensor in tensors.items():
            if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
                continue
            # A finite sum means every value is finite (NaN and infinity carry into it), at a twentieth of
            # the cost of checking each value; a sum that overflows is checked value by value.
            if not bool(torch.isfinite(tensor.sum())) and not bool(torch.isfinite(tensor).all()):
                return name
    return None


def check_finite_to_save(target: Path, tensors: Mapping[str, Any]) -> None:
    """Raise :class:`ModelFileError` before ``tensors`` holding NaN or infinity are saved to ``target``
    (in the dtype they will be stored in: float16 turns weights beyond 65,504 into infinity)."""
    name = non_finite_tensor(tensors)
    if name is not None:
        raise ModelFileError(
            f"the model was not saved to {target}: its tensor {name} holds NaN or infinite values "
            "(training diverged, or the weights overflow float16)"
        )


def check_finite_weights(folder: Path, tensors: Mapping[str, Any]) -> None:
    """Raise :class:`ModelFileError` naming ``folder`` and the tensor when the weights loaded from it
    hold NaN or infinity: such a model answers nothing or anything, never with an error of its own."""
    name = non_finite_tensor(tensors)
    if name is not None:
        files = ", ".join(p.name for p in weight_files(Path(folder))) or "no weight file"
        raise ModelFileError(
            f"the weights in {folder} ({files}) hold NaN or infinite values (tensor {name}): the model is broken "
            "(saved from a training run that diverged?); replace it with an intact copy"
        )


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


def file_digest(path: Path) -> str:
    """The sha256 of the file at ``path`` (hex), read a megabyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
