"""Uniform weight averaging of encoders fine-tuned from the same starting point ("model soup",
Wortsman et al., 2022, https://arxiv.org/abs/2203.05482).

Runs that start from the same pretrained weights usually stay in one basin of the loss, so the
mean of their weights is itself a good encoder and often better than each run alone. The
ingredients must share architecture, tokenizer and pooling: everything but ``model.safetensors``
is copied from the first one after checking that the others match it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from dpr_components.encoders.model_files import check_finite_weights, check_model_files
from dpr_components.encoders.pairing import PAIR_FILE, write_pair_files
from dpr_components.utils.atomic_files import atomic_directory
from dpr_components.utils.output_folders import ENCODER_PAIR, MODEL, check_output_folder, write_marker

WEIGHTS_FILE = "model.safetensors"
ENCODER_FOLDERS = ("question_encoder", "passage_encoder")
# Files whose contents must agree between ingredients (when present): they define what the weights mean.
MUST_MATCH = ("config.json", "encoder_config.json", "tokenizer.json", "tokenizer_config.json", "modules.json")


class AveragingError(ValueError):
    """The ingredients cannot be averaged (missing weights, different architectures, ...)."""


def _normalised_weights(count: int, weights: Sequence[float] | None) -> list[float]:
    if weights is None:
        return [1.0 / count] * count
    if len(weights) != count:
        raise AveragingError(f"{len(weights)} weights given for {count} models")
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise AveragingError(f"weights must be non-negative with a positive sum, got {list(weights)}")
    total = float(sum(weights))
    return [w / total for w in weights]


def _check_same_files(reference: Path, other: Path) -> None:
    for name in MUST_MATCH:
        first, second = reference / name, other / name
        if first.exists() != second.exists():
            raise AveragingError(f"{name} exists in only one of {reference} and {other}")
        if first.exists() and _comparable(first) != _comparable(second):
            raise AveragingError(f"{other / name} differs from {first}: the models are not the same architecture")


def _comparable(path: Path) -> Any:
    """A file's content for comparison; JSON ignores the stored dtype (fp16 exports say float32) and a
    tokenizer's saved truncation and padding (settings of the last call, not of the vocabulary)."""
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text
    if isinstance(data, dict):
        data = {
            k: v
            for k, v in data.items()
            if k not in ("dtype", "torch_dtype", "transformers_version", "_name_or_path", "truncation", "padding")
        }
    return data


def _load_weights(folder: Path) -> dict[str, torch.Tensor]:
    path = folder / WEIGHTS_FILE
    if not path.is_file():
        raise AveragingError(f"{path} not found: averaging needs safetensors weights in each encoder folder")
    check_model_files(folder)
    weights = load_file(str(path))
    check_finite_weights(folder, weights)
    return weights


def average_state_dicts(
    states: Sequence[dict[str, torch.Tensor]], weights: Sequence[float], names: Sequence[str]
) -> dict[str, torch.Tensor]:
    """The weighted mean of ``states`` (float32 sums, stored in the first state's dtypes)."""
    reference = states[0]
    for state, name in zip(states[1:], names[1:], strict=True):
        if state.keys() != reference.keys():
            missing = sorted(set(reference) ^ set(state))[:3]
            raise AveragingError(f"{name} has different parameters from {names[0]} (e.g. {missing})")
        for key, tensor in state.items():
            if tensor.shape != reference[key].shape:
                raise AveragingError(
                    f"{name}: {key} has shape {tuple(tensor.shape)}, {names[0]} has {tuple(reference[key].shape)}"
                )
    averaged: dict[str, torch.Tensor] = {}
    for key, first in reference.items():
        if not first.is_floating_point() or all(torch.equal(first, state[key]) for state in states[1:]):
            # Integer buffers (e.g. position ids) are not learned: keep the first model's. Equal
            # tensors (a passage encoder every run kept fixed) stay bit-identical: the float sum
            # would round them, and bf16 encoding would turn that into other vectors.
            averaged[key] = first.clone()
            continue
        total = torch.zeros(first.shape, dtype=torch.float32)
        for state, weight in zip(states, weights, strict=True):
            total += weight * state[key].to(torch.float32)
        averaged[key] = total.to(first.dtype).contiguous()
    return averaged


def _average_into(sources: Sequence[Path], weights: Sequence[float], target: Path) -> None:
    for other in sources[1:]:
        _check_same_files(sources[0], other)
    states = [_load_weights(folder) for folder in sources]
    averaged = average_state_dicts(states, weights, [str(s) for s in sources])
    # The pair record names the first source's partner: the averaged pair gets its own (see average_models).
    shutil.copytree(sources[0], target, dirs_exist_ok=True, ignore=shutil.ignore_patterns(WEIGHTS_FILE, PAIR_FILE))
    save_file(averaged, str(target / WEIGHTS_FILE), metadata={"format": "pt"})


def _is_training_output(folder: Path) -> bool:
    return all((folder / name).is_dir() for name in ENCODER_FOLDERS)


def average_models(
    sources: Sequence[str | Path], out: str | Path, weights: Sequence[float] | None = None, overwrite: bool = False
) -> Path:
    """Average encoder folders, or training outputs (``question_encoder/`` + ``passage_encoder/``)
    encoder by encoder, into ``out`` (replaced atomically when empty or an earlier average;
    ``overwrite``: whatever it holds but the sources). Returns ``out``."""
    folders = [Path(source) for source in sources]
    if len(folders) < 2:
        raise AveragingError("averaging needs at least two models")
    for folder in folders:
        if not folder.is_dir():
            raise AveragingError(f"{folder} is not a folder")
    shares = _normalised_weights(len(folders), weights)
    paired = [_is_training_output(folder) for folder in folders]
    if any(paired) and not all(paired):
        raise AveragingError("mix of training outputs (question_encoder/ + passage_encoder/) and single encoders")
    kind = ENCODER_PAIR if all(paired) else MODEL
    out = check_output_folder(out, kind, inputs=folders, overwrite=overwrite)
    with atomic_directory(out) as tmp:
        if all(paired):
            for name in ENCODER_FOLDERS:
                (tmp / name).mkdir()
                _average_into([folder / name for folder in folders], shares, tmp / name)
            write_pair_files(tmp / ENCODER_FOLDERS[0], tmp / ENCODER_FOLDERS[1])
        else:
            _average_into(folders, shares, tmp)
        record = {"averaged_from": [_portable(folder) for folder in folders], "weights": shares}
        (tmp / "averaging.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        write_marker(tmp, kind)
    return out


def _portable(folder: Path) -> str:
    """Recorded as given when relative, else by name only, so the record names no machine paths."""
    return folder.name if folder.is_absolute() else str(folder)
