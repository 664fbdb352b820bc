"""Save a trained bi-encoder in Hugging Face DPR layout, loadable by ``TextEncoder``,
``DenseRetriever``, ``QuestionEmbedder`` and ``PassageEmbedder`` as they are:

    <out>/question_encoder/   DPRQuestionEncoder + tokenizer + encoder_config.json + encoder_pair.json
    <out>/passage_encoder/    DPRContextEncoder  + tokenizer + encoder_config.json + encoder_pair.json
    <out>/training.json       how it was trained (optional metadata)

``encoder_pair.json`` records each folder's role and the weights digest of the pair's passage
encoder, so ``DenseRetriever`` can check its store even for a question encoder copied elsewhere
(see :mod:`dpr_components.encoders.pairing`).

The ``encoder_config.json`` sidecar records pooling, normalisation and maximum length, which
the DPR classes themselves cannot express (e.g. a mean-pooled MiniLM). With ``fp16`` the
weights are stored as float16 safetensors (half the size, for committing) while config.json
keeps ``dtype: float32``, so loaders upcast them instead of running in half precision."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch

from dpr_components.encoder_training.dpr_layout import dpr_to_dpr
from dpr_components.encoder_training.model import BiEncoder
from dpr_components.encoders.model_files import check_finite_to_save
from dpr_components.encoders.model_layout import SIDECAR_FILE
from dpr_components.encoders.pairing import PASSAGE_DIR, QUESTION_DIR, write_pair_files
from dpr_components.utils.atomic_files import atomic_directory
from dpr_components.utils.fault_points import fault_point
from dpr_components.utils.output_folders import ENCODER_PAIR, write_marker

if TYPE_CHECKING:
    from transformers import PreTrainedModel

TRAINING_FILE = "training.json"


def save_weights(model: torch.nn.Module, folder: Path, fp16: bool = False) -> None:
    """``save_pretrained`` as safetensors; with ``fp16`` float16 weights that load as float32."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    folder.mkdir(parents=True, exist_ok=True)
    to_save = cast("PreTrainedModel", copy.deepcopy(model).to(torch.float16) if fp16 else model)
    to_save.save_pretrained(str(folder), safe_serialization=True)
    if fp16:
        config_path = folder / "config.json"
        config = json.loads(config_path.read_text(encoding="utf-8"))
        config["dtype"] = "float32"
        config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def save_encoder_folder(
    model: torch.nn.Module, tokenizer: Any, folder: Path, sidecar: dict[str, Any], fp16: bool = False
) -> None:
    """One encoder folder: weights (safetensors), config, tokenizer and the sidecar."""
    save_weights(model, folder, fp16)
    tokenizer.save_pretrained(str(folder))
    (folder / SIDECAR_FILE).write_text(json.dumps(sidecar, indent=2) + "\n", encoding="utf-8")


def stored_weights(model: torch.nn.Module, fp16: bool) -> dict[str, torch.Tensor]:
    """The tensors of ``model`` as an export stores them (float16 with ``fp16``)."""
    state = model.state_dict()
    return {name: t.to(torch.float16) if fp16 and t.is_floating_point() else t for name, t in state.items()}


def export_bi_encoder(
    model: BiEncoder, out: str | Path, fp16: bool = False, metadata: dict[str, Any] | None = None
) -> Path:
    """Write ``model`` to ``out`` (replaced atomically) and return ``out``; weights holding NaN or
    infinity as stored are refused before anything is written."""
    out = Path(out)
    check_finite_to_save(out, stored_weights(model, fp16))
    sidecar = model.encoder_metadata()
    with atomic_directory(out) as tmp:
        save_encoder_folder(model.question_model, model.question_tokenizer, tmp / QUESTION_DIR, sidecar, fp16)
        passage = dpr_to_dpr(model.context_model, "context")
        save_encoder_folder(passage, model.passage_tokenizer, tmp / PASSAGE_DIR, sidecar, fp16)
        write_pair_files(tmp / QUESTION_DIR, tmp / PASSAGE_DIR)
        write_marker(tmp, ENCODER_PAIR)
        fault_point("training.export.files_written")
        if metadata is not None:
            (tmp / TRAINING_FILE).write_text(json.dumps(metadata, indent=2, default=str) + "\n", encoding="utf-8")
    return out
