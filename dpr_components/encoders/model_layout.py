"""What a checkpoint folder holds, read from its files (never guessed): which layout, which
transformer folder, how to pool and normalise, how many tokens.

Supported folders:
- the bundled all-MiniLM-L6-v2 (``bundled:all-MiniLM-L6-v2``), a sentence-transformers folder;
- Hugging Face DPR layout (``DPRQuestionEncoder`` / ``DPRContextEncoder``, e.g. facebook/dpr-*);
- sentence-transformers folders (pooling and normalisation read from their module files);
- plain BERT-like folders (``AutoModel``), CLS pooling unless told otherwise;
- folders written by :func:`save_encoder` (an ``encoder_config.json`` sidecar records pooling).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dpr_components.encoders.bundled import BUNDLED_MINILM, BundledModelError, model_folder
from dpr_components.encoders.model_files import CONFIG_LIMITS, ModelFileError
from dpr_components.utils.validation import short_repr

SIDECAR_FILE = "encoder_config.json"


class EncoderLoadError(ModelFileError):
    """A model folder is missing, of an unknown layout, or would load with random weights."""


def resolve_model_path(model: str) -> Path:
    """Turn a model reference (``bundled:<name>`` or a folder path) into an existing folder."""
    try:
        return model_folder(model, "encoder", f"give a local folder or a bundled model such as {BUNDLED_MINILM!r}")
    except BundledModelError as error:
        raise EncoderLoadError(str(error)) from None


# The Hugging Face DPR layout: a BERT wrapped as DPRQuestionEncoder or DPRContextEncoder.
DPR_KINDS = ("dpr_question", "dpr_context")


@dataclass(frozen=True)
class ModelLayout:
    """What a checkpoint folder holds and how to pool it."""

    kind: Literal["dpr_question", "dpr_context", "sentence_transformers", "hf"]
    transformer_path: Path
    pooling: Literal["cls", "mean", "pooler"]
    normalize: bool
    max_length: int | None
    max_positions: int | None = None  # the model's max_position_embeddings, when its config.json gives it
    projection_dim: int = 0  # a DPR encoder's projection of its [CLS] vector (0: none)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise EncoderLoadError(f"cannot read {path}: {error}") from error


def check_max_length(value: Any, positions: int | None, name: str = "max_length") -> int | None:
    """``value`` when it is None or a positive integer within the model's ``positions`` (or, when
    they are unknown, within any model's); otherwise an :class:`EncoderLoadError` naming ``name``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EncoderLoadError(f"{name} must be a positive integer, got {short_repr(value, 40)}")
    limit = positions or CONFIG_LIMITS["max_position_embeddings"]
    if value > limit:
        bound = f"the model's {positions:,} positions (max_position_embeddings)" if positions else f"{limit:,} tokens"
        raise EncoderLoadError(f"{name} is {value:,}, more than {bound}")
    return value


def _positions(config: dict[str, Any]) -> int | None:
    value = config.get("max_position_embeddings")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _read_sidecar(path: Path, positions: int | None) -> dict[str, Any]:
    """The ``encoder_config.json`` of ``path`` (empty without one), its values checked."""
    file = path / SIDECAR_FILE
    if not file.is_file():
        return {}
    sidecar = _read_json(file)
    if not isinstance(sidecar, dict):
        raise EncoderLoadError(f"{file} is not a JSON object of encoder settings")
    if sidecar.get("pooling", "cls") not in ("cls", "mean", "pooler"):
        raise EncoderLoadError(f"{file}: pooling must be cls, mean or pooler, got {short_repr(sidecar['pooling'], 40)}")
    if not isinstance(sidecar.get("normalize", False), bool):
        raise EncoderLoadError(f"{file}: normalize must be true or false, got {short_repr(sidecar['normalize'], 40)}")
    check_max_length(sidecar.get("max_length"), positions, f"{file}: max_length")
    return sidecar


def detect_layout(path: Path) -> ModelLayout:
    """Inspect a checkpoint folder and describe it."""
    config = _read_json(path / "config.json")
    if not isinstance(config, dict):
        raise EncoderLoadError(f"{path / 'config.json'} is not a JSON object: not a transformers configuration")
    architectures = config.get("architectures") or []
    positions = _positions(config)
    sidecar = _read_sidecar(path, positions)
    if "DPRQuestionEncoder" in architectures or "DPRContextEncoder" in architectures:
        kind: Literal["dpr_question", "dpr_context"] = (
            "dpr_question" if "DPRQuestionEncoder" in architectures else "dpr_context"
        )
        return ModelLayout(
            kind=kind,
            transformer_path=path,
            pooling=sidecar.get("pooling", "pooler"),
            normalize=bool(sidecar.get("normalize", False)),
            max_length=sidecar.get("max_length"),
            max_positions=positions,
            projection_dim=_projection_dim(config, path),
        )
    if config.get("model_type") == "dpr":
        raise EncoderLoadError(
            f"{path} is a DPR checkpoint of architecture {architectures}; only DPRQuestionEncoder and "
            "DPRContextEncoder folders can encode (a DPRReader is a reader)"
        )
    if (path / "modules.json").is_file():
        return _sentence_transformers_layout(path, sidecar)
    return ModelLayout(
        kind="hf",
        transformer_path=path,
        pooling=sidecar.get("pooling", "cls"),
        normalize=bool(sidecar.get("normalize", False)),
        max_length=sidecar.get("max_length"),
        max_positions=positions,
    )


def _projection_dim(config: dict[str, Any], path: Path) -> int:
    """A DPR config's ``projection_dim`` (0 when absent or null); an error naming the file when it is not a count."""
    value = config.get("projection_dim") or 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise EncoderLoadError(f"{path / 'config.json'}: projection_dim must be a whole number >= 0, got {value!r}")
    return value


def _sentence_transformers_layout(path: Path, sidecar: dict[str, Any]) -> ModelLayout:
    modules = _read_json(path / "modules.json")
    transformer_path, pooling, normalize = path, "cls", False
    for module in modules:
        module_type = str(module.get("type", ""))
        module_path = path / module.get("path", "")
        if module_type.endswith(".Transformer"):
            transformer_path = module_path
        elif module_type.endswith(".Pooling"):
            pooling_config = _read_json(module_path / "config.json")
            if pooling_config.get("pooling_mode_mean_tokens"):
                pooling = "mean"
            elif pooling_config.get("pooling_mode_cls_token"):
                pooling = "cls"
            else:
                raise EncoderLoadError(f"{module_path}: only CLS or mean pooling is supported")
        elif module_type.endswith(".Normalize"):
            normalize = True
    transformer_config = path / "config.json" if transformer_path == path else transformer_path / "config.json"
    positions = _positions(_read_json(transformer_config)) if transformer_config.is_file() else None
    return ModelLayout(
        kind="sentence_transformers",
        transformer_path=transformer_path,
        pooling=sidecar.get("pooling", pooling),
        normalize=bool(sidecar.get("normalize", normalize)),
        max_length=sidecar.get("max_length", _max_seq_length(path, positions)),
        max_positions=positions,
    )


def _max_seq_length(path: Path, positions: int | None) -> int | None:
    """``max_seq_length`` of a sentence-transformers folder's ``sentence_bert_config.json``, checked."""
    file = path / "sentence_bert_config.json"
    if not file.is_file():
        return None
    config = _read_json(file)
    if not isinstance(config, dict):
        raise EncoderLoadError(f"{file} is not a JSON object of sentence-transformers settings")
    return check_max_length(config.get("max_seq_length"), positions, f"{file}: max_seq_length")
