"""Where reader training starts: a ``DPRReader`` folder with its trained heads, or an encoder given
fresh heads (the reader's model files, loading and saving, are :mod:`dpr_components.readers.model`)."""

from __future__ import annotations

from typing import Any

import torch

from dpr_components.encoders import model_files
from dpr_components.encoders.model_layout import EncoderLoadError, resolve_model_path
from dpr_components.readers.model import ReaderLoadError, is_reader_folder, load_reader, load_tokenizer


def reader_to_train(model: str, seed: int = 0) -> tuple[torch.nn.Module, Any]:
    """Where reader training starts: a ``DPRReader`` folder goes on with its trained heads (a longer
    schedule on more questions than one run can afford), anything else is an encoder given fresh heads."""
    if is_reader_folder(model):
        reader, tokenizer = load_reader(model)
        return reader.train(), tokenizer
    return reader_from_encoder(model, seed=seed)


def reader_from_encoder(model: str, seed: int = 0) -> tuple[torch.nn.Module, Any]:
    """A fresh ``DPRReader`` whose BERT is the given encoder and whose two heads are newly initialised.

    ``model`` is ``bundled:all-MiniLM-L6-v2`` or a BERT / sentence-transformers folder."""
    from transformers import AutoModel, DPRConfig, DPRReader

    from dpr_components.encoders.model_layout import detect_layout

    try:
        layout = detect_layout(resolve_model_path(model))
    except EncoderLoadError as error:
        raise ReaderLoadError(str(error)) from error
    model_files.check_model_files(layout.transformer_path)
    try:
        with model_files.quiet_transformers():
            encoder, info = AutoModel.from_pretrained(
                str(layout.transformer_path), output_loading_info=True, dtype=torch.float32, trust_remote_code=False
            )
    except model_files.LOAD_ERRORS as error:
        raise ReaderLoadError(model_files.describe_load_error(layout.transformer_path, error)) from error
    missing = [k for k in info.get("missing_keys", []) if "pooler" not in k and "position_ids" not in k]
    if missing:
        raise ReaderLoadError(f"{layout.transformer_path} lacks encoder weights (e.g. {sorted(missing)[:3]})")
    if encoder.config.model_type != "bert":
        raise ReaderLoadError(f"a DPRReader needs a BERT encoder; {model!r} is a {encoder.config.model_type!r} model")
    model_files.check_finite_weights(layout.transformer_path, encoder.state_dict())
    settings = model_files.bert_config_settings(encoder.config)
    config = DPRConfig(**settings, projection_dim=0)
    torch.manual_seed(seed)
    reader = DPRReader(config)
    weights = {k: v for k, v in encoder.state_dict().items() if not k.startswith("pooler.")}
    result = reader.span_predictor.encoder.bert_model.load_state_dict(weights, strict=False)
    unexpected = [k for k in result.unexpected_keys]
    missing = [k for k in result.missing_keys if "position_ids" not in k]
    if missing or unexpected:
        raise ReaderLoadError(
            f"encoder weights do not fit the reader: missing {missing[:3]}, unexpected {unexpected[:3]}"
        )
    return reader, load_tokenizer(layout.transformer_path)
