"""One vector per input from a model's output: its [CLS] row, the mean over real tokens, or DPR's pooler."""

from __future__ import annotations

from typing import Any

import torch

from dpr_components.encoders.model_layout import EncoderLoadError
from dpr_components.encoders.openvino_model import pool_mean
from dpr_components.encoders.plain_bert import PlainBert


def pool(model: torch.nn.Module | PlainBert, batch: Any, pooling: str) -> torch.Tensor:
    """Run the model and pool one vector per input (``pooler`` is DPR's pooler_output)."""
    if isinstance(model, PlainBert):
        hidden = model.last_hidden_state(batch)
        if pooling == "pooler":
            return model.pooler_output(hidden)
    elif hasattr(model, "question_encoder") or hasattr(model, "ctx_encoder"):
        inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        output = model(**inputs, output_hidden_states=pooling != "pooler")
        if pooling == "pooler":
            return output.pooler_output
        hidden = output.hidden_states[-1]
    else:
        output = model(**batch)
        hidden = output.last_hidden_state
        if pooling == "pooler":
            if getattr(output, "pooler_output", None) is None:
                raise EncoderLoadError("this model has no pooler: use pooling 'cls' or 'mean'")
            return output.pooler_output
    if pooling == "cls":
        return hidden[:, 0]
    return pool_mean(hidden, batch["attention_mask"])
