"""The passage-selection logit alone, for re-ranking: the selection head reads nothing but the last
layer's [CLS] vector, so that layer is computed for [CLS] only.

Its keys and values still come from every token, so the logit is the full forward's (up to float
rounding); the queries, the attention output and the feed-forward block of every other token are
skipped: about a seventh of a 6-layer reader's work (docs/benchmarks/reader/ranker_latency.md measures it).
A reader with its own ``selection_logits`` (OpenVINO's, which compiles this same computation) runs
that; any other reader that is not a torch ``DPRReader`` around a BERT runs its full forward."""

from __future__ import annotations

import copy
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class _SelectionParts:
    """A reader split for the selection logit: the encoder below its last layer, that layer, the head."""

    below_last: torch.nn.Module
    last: torch.nn.Module
    classifier: torch.nn.Module


_PARTS: weakref.WeakKeyDictionary[torch.nn.Module, _SelectionParts | None] = weakref.WeakKeyDictionary()
_PARTS_LOCK = threading.Lock()


def _shallow_copy(module: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``module`` sharing its parameters, whose submodules can be replaced without touching it."""
    clone = copy.copy(module)
    clone._modules = dict(module._modules)
    return clone


def _split(reader: torch.nn.Module) -> _SelectionParts | None:
    """The parts of a transformers ``DPRReader`` (``None`` for anything else)."""
    predictor = getattr(reader, "span_predictor", None)
    bert = getattr(getattr(predictor, "encoder", None), "bert_model", None)
    layers = getattr(getattr(bert, "encoder", None), "layer", None)
    if predictor is None or bert is None or not isinstance(layers, torch.nn.ModuleList) or len(layers) < 1:
        return None
    last = layers[-1]
    if not hasattr(getattr(getattr(last, "attention", None), "self", None), "query"):
        return None
    encoder = _shallow_copy(bert.encoder)
    encoder.layer = torch.nn.ModuleList(list(layers)[:-1])
    below_last = _shallow_copy(bert)
    below_last.encoder = encoder
    return _SelectionParts(below_last, last, predictor.qa_classifier)


def _parts(reader: torch.nn.Module) -> _SelectionParts | None:
    with _PARTS_LOCK:
        if reader not in _PARTS:
            _PARTS[reader] = _split(reader) if isinstance(reader, torch.nn.Module) else None
        return _PARTS[reader]


def _first_token_layer(layer: Any, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """A BERT layer's output at position 0 alone (rows × hidden), attending to every unpadded token."""
    attention = layer.attention.self
    rows, tokens, _ = hidden.shape
    heads, size = attention.num_attention_heads, attention.attention_head_size
    first = hidden[:, :1]
    query = attention.query(first).view(rows, 1, heads, size).transpose(1, 2)
    key = attention.key(hidden).view(rows, tokens, heads, size).transpose(1, 2)
    value = attention.value(hidden).view(rows, tokens, heads, size).transpose(1, 2)
    context = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask[:, None, None, :].bool(), scale=attention.scaling
    )
    attended = layer.attention.output(context.transpose(1, 2).reshape(rows, 1, heads * size), first)
    return layer.output(layer.intermediate(attended), attended)[:, 0]


def selection_logits(reader: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The passage-selection logit of each row (float32), the last layer computed for [CLS] only."""
    own = getattr(reader, "selection_logits", None)
    if callable(own):
        return own(input_ids, attention_mask)
    parts = _parts(reader)
    if parts is None:
        return reader(input_ids=input_ids, attention_mask=attention_mask, return_dict=True).relevance_logits.float()
    hidden = parts.below_last(input_ids=input_ids, attention_mask=attention_mask, return_dict=True).last_hidden_state
    return parts.classifier(_first_token_layer(parts.last, hidden, attention_mask)).view(-1).float()
