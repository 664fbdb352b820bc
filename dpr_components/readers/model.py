"""Reader checkpoints in the Hugging Face ``DPRReader`` layout: load and save (training starts from an
encoder in :mod:`dpr_components.reader_training.model`).

A ``DPRReader`` is a BERT encoder with two heads: ``qa_outputs`` (start/end logit per token) and
``qa_classifier`` (passage-selection logit from the [CLS] vector). facebook/dpr-reader-* folders
and the readers this project trains share the layout (``DPRConfig`` describes any BERT size,
MiniLM included), so one loader serves both. A folder whose heads are missing is refused:
it would answer with random heads."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch

from dpr_components.encoders import model_files
from dpr_components.encoders.bundled import (
    BUNDLED_PREFIX,
    BundledModelError,
    is_bundled_encoder,
    model_folder,
)
from dpr_components.readers.plain_reader import PlainReader, load_plain_reader
from dpr_components.utils.atomic_files import atomic_directory
from dpr_components.utils.fault_points import fault_point
from dpr_components.utils.output_folders import READER, check_output_folder, write_marker

if TYPE_CHECKING:
    from transformers import PreTrainedModel

READER_ARCHITECTURE = "DPRReader"
_HARMLESS_MISSING = ("embeddings.position_ids",)


class ReaderLoadError(model_files.ModelFileError):
    """A reader folder is missing, is not a reader, or would run with random weights."""


def _read_config(path: Path) -> dict[str, Any]:
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ReaderLoadError(f"cannot read {path / 'config.json'}: {error}") from error
    if not isinstance(config, dict):
        raise ReaderLoadError(f"{path / 'config.json'} is not a JSON object: not a transformers configuration")
    return config


def resolve_reader_path(model: str) -> Path:
    """The folder of a reader checkpoint: ``bundled:reader-minilm`` or a folder; the bundled encoders are
    refused (they hold no reader heads)."""
    if is_bundled_encoder(model):
        raise ReaderLoadError(
            f"{model!r} is an encoder without reader heads; train a reader from it with "
            "training/reader/train_reader.py and give the output folder"
        )
    try:
        return model_folder(
            model, "reader", "train one with training/reader/train_reader.py, see training/reader/README.md"
        )
    except BundledModelError as error:
        raise ReaderLoadError(str(error)) from None


def load_tokenizer(path: Path) -> Any:
    from transformers import AutoTokenizer

    try:
        with model_files.quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(str(path), trust_remote_code=False)
    except model_files.LOAD_ERRORS as error:
        raise ReaderLoadError(
            f"cannot load the tokenizer of {path} (tokenizer.json, vocab.txt): {model_files.first_line(error)}"
        ) from error
    if not getattr(tokenizer, "is_fast", False):
        raise ReaderLoadError(f"{path} has no fast tokenizer (tokenizer.json); the reader needs its character offsets")
    if len(tokenizer) < 100 or tokenizer.cls_token_id is None or tokenizer.sep_token_id is None:
        raise ReaderLoadError(f"the tokenizer of {path} is not a BERT-style tokenizer with [CLS] and [SEP]")
    return tokenizer


def load_reader(model: str | Path, plain: bool = False) -> tuple[Any, Any]:
    """Load a ``DPRReader`` folder (fp32, eval mode) and its tokenizer; ``plain``: as a
    :class:`~dpr_components.readers.plain_reader.PlainReader` when that reproduces it, without
    importing transformers (a torch module otherwise)."""
    path = resolve_reader_path(str(model))
    config = _read_config(path)
    architectures = config.get("architectures") or []
    if READER_ARCHITECTURE not in architectures:
        raise ReaderLoadError(
            f"{path} is a {architectures or config.get('model_type', 'unknown')} checkpoint, not a DPRReader: "
            "its span and passage-selection heads would be random (train a reader with training/reader/train_reader.py)"
        )
    model_files.check_model_files(path)
    if plain:
        loaded = load_plain_reader(path)
        if loaded is not None:
            return loaded
    return _load_with_transformers(path)


def _load_with_transformers(path: Path) -> tuple[torch.nn.Module, Any]:
    from transformers import DPRReader

    try:
        with model_files.quiet_transformers():
            # transformers types from_pretrained as returning the model alone, not (model, info)
            reader, info = cast(
                tuple[DPRReader, dict[str, Any]],
                DPRReader.from_pretrained(
                    str(path), output_loading_info=True, dtype=torch.float32, trust_remote_code=False
                ),
            )
    except model_files.LOAD_ERRORS as error:
        raise ReaderLoadError(model_files.describe_load_error(path, error)) from error
    missing = sorted(k for k in info.get("missing_keys", []) if not any(h in k for h in _HARMLESS_MISSING))
    if missing:
        files = ", ".join(p.name for p in model_files.weight_files(path)) or "no weight file"
        raise ReaderLoadError(
            f"the weights in {path} ({files}) lack {len(missing)} reader weights (e.g. {missing[:3]}): not a "
            "DPRReader's weights; it would run with random weights"
        )
    model_files.check_finite_weights(path, reader.state_dict())
    return reader.eval(), load_tokenizer(path)


def is_reader_folder(model: str | Path) -> bool:
    """True when ``model`` is a folder (or a bundled reader, e.g. ``bundled:rerank-reader-minilm``) whose
    config names a ``DPRReader`` (heads included)."""
    path = Path(model)
    if str(model).startswith(BUNDLED_PREFIX) and not is_bundled_encoder(str(model)):
        try:
            path = resolve_reader_path(str(model))
        except ReaderLoadError:
            return False
    return (path / "config.json").is_file() and READER_ARCHITECTURE in (_read_config(path).get("architectures") or [])


def trained_objective(model: str | Path) -> str:
    """The objective the reader folder ``model`` was trained with, from its ``reader_info.json``
    (``training.objective``): ``selection`` for a passage ranker whose span head is untrained,
    ``reader`` otherwise (also for folders without a record, e.g. facebook/dpr-reader-*)."""
    try:
        record = json.loads((resolve_reader_path(str(model)) / "reader_info.json").read_text(encoding="utf-8"))
        return str(record["training"].get("objective", "reader"))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError, ReaderLoadError):
        return "reader"


def save_reader(
    reader: torch.nn.Module,
    tokenizer: Any,
    path: str | Path,
    dtype: torch.dtype | None = None,
    info: dict[str, Any] | None = None,
    overwrite: bool = False,
) -> None:
    """Write a ``DPRReader`` folder atomically (``dtype=torch.float16`` halves it for committing); weights
    holding NaN or infinity (in ``dtype``) are refused before anything is written.

    ``info`` (training settings, scores) goes to ``reader_info.json`` beside the weights. ``path`` is
    replaced only when it is empty or a reader saved here before (``overwrite``: whatever it holds;
    see :mod:`dpr_components.utils.output_folders`)."""
    from dpr_components.utils.atomic_files import atomic_write_text

    check_output_folder(path, READER, overwrite=overwrite)
    state = {
        k: (v.to(dtype) if dtype is not None and v.is_floating_point() else v) for k, v in reader.state_dict().items()
    }
    model_files.check_finite_to_save(Path(path), state)
    pretrained = cast("PreTrainedModel", reader)  # a DPRReader
    with model_files.quiet_transformers(), atomic_directory(path) as tmp:
        pretrained.config.architectures = [READER_ARCHITECTURE]
        pretrained.save_pretrained(str(tmp), state_dict=state, safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
        if info is not None:
            atomic_write_text(tmp / "reader_info.json", json.dumps(info, indent=1, sort_keys=True) + "\n")
        write_marker(tmp, READER)
        fault_point("reader.save.files_written")
        # A model folder reads like any other (the temporary folder and some writers use private modes).
        tmp.chmod(0o755)
        for file in tmp.iterdir():
            file.chmod(0o644)


def reader_logits(
    reader: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Start logits, end logits (rows × tokens) and passage-selection logits (rows), as float32."""
    output = reader(input_ids=input_ids, attention_mask=attention_mask, return_dict=True)
    return output.start_logits.float(), output.end_logits.float(), output.relevance_logits.float()


_SHARED: dict[tuple[str, bool, bool], tuple[Any, Any]] = {}
_SHARED_LOCK = threading.Lock()


def cast_linear_weights(module: torch.nn.Module, dtype: torch.dtype) -> torch.nn.Module:
    """``module`` with the weights and biases of its linear layers in ``dtype`` (in place; embeddings
    and layer norms keep theirs)."""
    for layer in module.modules():
        if isinstance(layer, torch.nn.Linear):
            layer.to(dtype)
    return module


def shared_reader(model: str, bf16_linear: bool = False, plain: bool = True) -> tuple[Any, Any]:
    """The reader folder ``model`` loaded once per process (``load_reader``), shared by every component
    that reads with it (``SpanReader``, ``PassageRanker``); ``plain``: in plain torch when that
    reproduces it (``False``: always a transformers module, e.g. to convert for OpenVINO).

    ``bf16_linear``: the copy for bf16 autocast, its linear layers' weights already in bfloat16.
    Autocast would cast them to bfloat16 at every call anyway, so the logits are the same, bit for
    bit, without that cast."""
    key = (model, bf16_linear, plain)
    with _SHARED_LOCK:
        if key not in _SHARED:
            reader, tokenizer = load_reader(model, plain=plain)
            if bf16_linear:
                plain_copy = isinstance(reader, PlainReader)
                reader = reader.with_bf16_linear() if plain_copy else cast_linear_weights(reader, torch.bfloat16)
            _SHARED[key] = (reader, tokenizer)
        return _SHARED[key]


_SHARED_OPENVINO: dict[tuple[str, bool, int], Any] = {}


def shared_openvino_reader(model: str, bf16: bool) -> Any:
    """The reader folder ``model`` converted for OpenVINO once per process, precision and thread count
    (:class:`~dpr_components.readers.openvino_reader.OpenVINOReader`; needs the ``openvino`` extra)."""
    from dpr_components.readers.openvino_reader import OpenVINOReader
    from dpr_components.utils.threads import read_threads

    key = (model, bf16, read_threads())
    reader, _ = shared_reader(model, plain=False)
    with _SHARED_LOCK:
        if key not in _SHARED_OPENVINO:
            _SHARED_OPENVINO[key] = OpenVINOReader(reader, bf16, key[2])
        return _SHARED_OPENVINO[key]
