"""A ``DPRReader`` folder run in plain torch and tokenised with the ``tokenizers`` library, without
importing transformers.

Why: importing transformers' model code (``modeling_utils`` pulls in ``torch._dynamo`` and
``torch.distributed.tensor``) took about two of the five seconds of a cold ``haystack run qa``
(docs/benchmarks/cli/cold_start.md). A reader is the BERT of :mod:`dpr_components.encoders.plain_bert`
plus two linear heads: ``qa_outputs`` (start and end logits of every token) and ``qa_classifier``
(the passage-selection logit from [CLS]).

The same checks as the encoders' plain path decide what runs here (one ``model.safetensors`` with
transformers' names, a WordPiece ``tokenizer.json`` as transformers builds it); for anything else
:func:`load_plain_reader` returns ``None`` and the caller loads the folder with transformers. The
same torch operations run in the same order, so the logits equal transformers' DPRReader's
(tests/readers/test_plain_reader.py), at float32 and with bf16 linear layers under autocast."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from haystack import logging

from dpr_components.encoders.model_files import check_finite_weights
from dpr_components.encoders.plain_bert import PlainBert, Unsupported, bert_backend, bert_from_weights, read_weights

logger = logging.getLogger(__name__)

_HEADS = {"span_predictor.qa_outputs": 2, "span_predictor.qa_classifier": 1}


@dataclass
class ReaderLogits:
    """What :func:`dpr_components.readers.model.reader_logits` reads from a reader's output."""

    start_logits: torch.Tensor
    end_logits: torch.Tensor
    relevance_logits: torch.Tensor


@dataclass(frozen=True)
class ReaderShape:
    """What the reading code asks of a reader's configuration."""

    max_position_embeddings: int


class PlainReader:
    """A ``DPRReader``'s forward pass: BERT, then the span and selection heads; called as transformers'
    ``DPRReader`` is (``reader(input_ids=..., attention_mask=...)``)."""

    def __init__(self, bert: PlainBert, heads: dict[str, torch.Tensor]) -> None:
        self.bert = bert
        self._heads = heads
        self.config = ReaderShape(bert.config.max_positions)

    def with_bf16_linear(self) -> PlainReader:
        """A copy whose linear layers' weights and biases are bfloat16 (embeddings and layer norms keep
        float32), as :func:`~dpr_components.readers.model.cast_linear_weights` leaves a torch reader."""

        def linear(name: str) -> bool:
            return not name.startswith("embeddings.") and "LayerNorm" not in name

        weights = {n: t.to(torch.bfloat16) if linear(n) else t for n, t in self.bert.weights.items()}
        bert = PlainBert(self.bert.config, weights, is_dpr=self.bert.is_dpr)
        return PlainReader(bert, {n: t.to(torch.bfloat16) for n, t in self._heads.items()})

    def named_tensors(self) -> dict[str, torch.Tensor]:
        """Every weight by name: the encoder's (as in ``bert_model``) and the heads' (``span_predictor.*``)."""
        return {**self.bert.weights, **self._heads}

    def _head(self, name: str, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self._heads[f"{name}.weight"], self._heads[f"{name}.bias"])

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **_: Any) -> ReaderLogits:
        """Start and end logits (rows × tokens) and the selection logit of each row."""
        hidden = self.bert.last_hidden_state({"input_ids": input_ids, "attention_mask": attention_mask})
        start, end = self._head("span_predictor.qa_outputs", hidden).split(1, dim=-1)
        rows, tokens = input_ids.shape
        relevance = self._head("span_predictor.qa_classifier", hidden[:, 0, :])
        return ReaderLogits(
            start.squeeze(-1).contiguous().view(rows, tokens),
            end.squeeze(-1).contiguous().view(rows, tokens),
            relevance.view(rows),
        )

    def selection_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The selection logit of each row (float32), the last layer computed for [CLS] only
        (see :mod:`dpr_components.readers.selection`)."""
        below = self.bert.last_hidden_state(
            {"input_ids": input_ids, "attention_mask": attention_mask}, layers=self.bert.config.num_layers - 1
        )
        first = self.bert.first_token_of_last_layer(below, attention_mask)
        return self._head("span_predictor.qa_classifier", first).view(-1).float()


class ReaderTokenizer:
    """The calls the reading code makes of a transformers fast tokenizer: one text without special
    tokens, its ids, character offsets and word ids; the special tokens' ids."""

    is_fast = True

    def __init__(self, backend: Any, ids: dict[str, int]) -> None:
        self._backend = backend
        self.cls_token_id, self.sep_token_id, self.pad_token_id = ids["cls_token"], ids["sep_token"], ids["pad_token"]

    def __len__(self) -> int:
        return int(self._backend.get_vocab_size(with_added_tokens=True))

    def __call__(self, text: str, add_special_tokens: bool = False, return_offsets_mapping: bool = False) -> Encoded:
        if add_special_tokens:
            raise ValueError("the reader's tokenizer adds its special tokens itself")
        encoding = self._backend.encode(text, add_special_tokens=False)
        return Encoded(encoding, return_offsets_mapping)


class Encoded(dict[str, Any]):
    """``input_ids`` (and ``offset_mapping`` when asked) of one text, with ``word_ids()`` as transformers'."""

    def __init__(self, encoding: Any, offsets: bool) -> None:
        super().__init__(input_ids=encoding.ids)
        if offsets:
            self["offset_mapping"] = encoding.offsets
        self._encoding = encoding

    def word_ids(self) -> list[int | None]:
        return list(self._encoding.word_ids)


def load_plain_reader(folder: Path) -> tuple[PlainReader, ReaderTokenizer] | None:
    """The reader in ``folder`` (float32) and its tokenizer, or ``None`` when this module does not
    reproduce it exactly (the caller then loads it with transformers)."""
    try:
        return _load(Path(folder))
    except Unsupported as reason:
        logger.debug("{folder}: reading with transformers ({reason})", folder=folder, reason=reason)
        return None


def _load(folder: Path) -> tuple[PlainReader, ReaderTokenizer]:
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        model_type, projection = config.get("model_type"), int(config.get("projection_dim") or 0)
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise Unsupported(f"cannot read config.json: {error}") from error
    if model_type != "dpr":
        raise Unsupported(f"model_type {model_type!r}, not a DPRReader's 'dpr'")
    if projection != 0:
        # transformers' DPRSpanPredictor builds an unused projection; its weights would be "missing".
        raise Unsupported("a reader encoder with a projection")
    stored = read_weights(folder)
    bert = bert_from_weights(folder, "dpr_reader", False, stored)
    hidden = bert.config.hidden_size
    heads: dict[str, torch.Tensor] = {}
    for name, rows in _HEADS.items():
        for part, size in (("weight", (rows, hidden)), ("bias", (rows,))):
            tensor = stored.get(f"{name}.{part}")
            if tensor is None or tuple(tensor.shape) != size or not tensor.is_floating_point():
                raise Unsupported(f"{name}.{part} missing or not of shape {size}")
            heads[f"{name}.{part}"] = tensor.to(torch.float32).contiguous()
    check_finite_weights(folder, heads)
    backend, ids, _ = bert_backend(folder)
    return PlainReader(bert, heads), ReaderTokenizer(backend, ids)
