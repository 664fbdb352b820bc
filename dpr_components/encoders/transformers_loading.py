"""An encoder checkpoint and its tokenizer loaded through transformers, checked: files intact, no
weight missing (it would run with random weights), weights finite, a tokenizer of more than a handful
of tokens; and the BERT inside a DPR encoder."""

from __future__ import annotations

from typing import Any, cast

import torch

from dpr_components.encoders.model_files import (
    LOAD_ERRORS,
    check_finite_weights,
    check_model_files,
    describe_load_error,
    first_line,
    quiet_transformers,
    weight_files,
)
from dpr_components.encoders.model_layout import EncoderLoadError, ModelLayout

# Weights a plain encoder may lack without being broken: the pooler is unused by CLS/mean pooling.
_HARMLESS_MISSING = ("pooler.", "embeddings.position_ids")


def load_transformer(layout: ModelLayout) -> torch.nn.Module:
    """The transformer of ``layout`` in eval mode; ``EncoderLoadError`` naming the folder when its files are
    damaged, its weights are not those of its architecture or hold NaN or infinity."""
    from transformers import AutoModel, DPRContextEncoder, DPRQuestionEncoder, PreTrainedModel

    folder = layout.transformer_path
    check_model_files(folder)
    model_class = {"dpr_question": DPRQuestionEncoder, "dpr_context": DPRContextEncoder}.get(layout.kind, AutoModel)
    try:
        with quiet_transformers():
            # transformers types from_pretrained as returning the model alone, not (model, info)
            model, info = cast(
                tuple[PreTrainedModel, dict[str, Any]],
                model_class.from_pretrained(str(folder), output_loading_info=True, trust_remote_code=False),
            )
    except LOAD_ERRORS as error:
        raise EncoderLoadError(describe_load_error(folder, error)) from error
    missing = [key for key in info.get("missing_keys", []) if not any(h in key for h in _HARMLESS_MISSING)]
    if missing:
        files = ", ".join(p.name for p in weight_files(folder))
        raise EncoderLoadError(
            f"the weights in {folder} ({files}) are not those of the {model.config.model_type!r} architecture "
            f"its config.json names ({len(missing)} missing, e.g. {sorted(missing)[:3]}); it would run with "
            "random weights"
        )
    check_finite_weights(folder, model.state_dict())
    return model.eval()


def load_tokenizer(layout: ModelLayout) -> Any:
    """The tokenizer of the transformer in ``layout``; ``EncoderLoadError`` naming the folder when it cannot be loaded."""
    from transformers import AutoTokenizer

    folder = layout.transformer_path
    try:
        with quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
    except LOAD_ERRORS as error:
        raise EncoderLoadError(
            f"cannot load the tokenizer of {folder} (tokenizer.json, vocab.txt): {first_line(error)}"
        ) from error
    if len(tokenizer) < 100:
        raise EncoderLoadError(
            f"the tokenizer of {folder} has only {len(tokenizer)} tokens: its tokenizer files (tokenizer.json, "
            "vocab.txt) are missing or incomplete"
        )
    return tokenizer


def transformer_body(model: torch.nn.Module) -> torch.nn.Module:
    """The BERT inside a DPR encoder (``model`` itself for any other checkpoint)."""
    for wrapper in ("question_encoder", "ctx_encoder"):
        if hasattr(model, wrapper):
            return cast(torch.nn.Module, getattr(model, wrapper).bert_model)
    return model
