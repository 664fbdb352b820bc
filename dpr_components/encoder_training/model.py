"""The bi-encoder being trained: a question encoder E_Q and a passage encoder E_P (independent
by default, as in DPR; optionally one shared encoder), held as Hugging Face DPR models so that
a checkpoint is saved in the layout :class:`~dpr_components.encoders.text_encoder.TextEncoder` loads.

Inputs and pooling are exactly those of ``TextEncoder``: questions alone, passages as the pair
``[CLS] title [SEP] text [SEP]`` (the text alone when the title is empty), truncated to
``max_length`` tokens, pooled by :func:`dpr_components.encoders.pooling.pool`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, cast

import torch

from dpr_components.dpr_data.examples import Ctx
from dpr_components.encoder_training.dpr_layout import Role, bert_to_dpr, dpr_class, dpr_to_dpr
from dpr_components.encoders.model_files import (
    LOAD_ERRORS,
    check_finite_weights,
    check_model_files,
    describe_load_error,
    quiet_transformers,
)
from dpr_components.encoders.model_layout import (
    EncoderLoadError,
    ModelLayout,
    check_max_length,
    detect_layout,
    resolve_model_path,
)
from dpr_components.encoders.pooling import pool
from dpr_components.encoders.transformers_loading import load_tokenizer
from dpr_components.utils.padding import length_sorted_batches

DEFAULT_MAX_LENGTH = 256  # DPR's sequence length


def _load_dpr_encoder(model: str, role: Role, dropout: float | None) -> tuple[torch.nn.Module, Any, ModelLayout]:
    from transformers import AutoModel

    layout = detect_layout(resolve_model_path(model))
    folder = layout.transformer_path
    check_model_files(folder)
    overrides: dict[str, Any] = (
        {} if dropout is None else {"hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout}
    )
    try:
        with quiet_transformers():
            if layout.kind in ("dpr_question", "dpr_context"):
                source_role: Role = "question" if layout.kind == "dpr_question" else "context"
                # transformers types from_pretrained as returning the model alone, not (model, info)
                encoder, info = cast(
                    tuple[torch.nn.Module, dict[str, Any]],
                    dpr_class(source_role).from_pretrained(
                        str(folder), dtype=torch.float32, output_loading_info=True, trust_remote_code=False, **overrides
                    ),
                )
                encoder = dpr_to_dpr(encoder, role)
            else:
                bert, info = AutoModel.from_pretrained(
                    str(folder), dtype=torch.float32, output_loading_info=True, trust_remote_code=False
                )
                encoder = bert_to_dpr(bert, role, **overrides)
    except LOAD_ERRORS as error:
        raise EncoderLoadError(describe_load_error(folder, error)) from error
    missing = [k for k in info.get("missing_keys", []) if not any(h in k for h in ("pooler.", "position_ids"))]
    if missing:
        raise EncoderLoadError(
            f"the weights in {folder} are not those of the architecture its config.json names ({len(missing)} "
            f"missing, e.g. {sorted(missing)[:3]}); training would start from random weights"
        )
    check_finite_weights(folder, encoder.state_dict())
    return encoder, load_tokenizer(layout), layout


def _pad(tokenizer: Any, features: list[dict[str, list[int]]]) -> Any:
    return tokenizer.pad(features, padding=True, return_tensors="pt")


class BiEncoder(torch.nn.Module):
    """E_Q and E_P with their tokenizers, pooling, normalisation and maximum input length."""

    def __init__(
        self,
        question_model: torch.nn.Module,
        passage_model: torch.nn.Module,
        question_tokenizer: Any,
        passage_tokenizer: Any,
        pooling: str,
        normalize: bool,
        max_length: int = DEFAULT_MAX_LENGTH,
        bf16: bool = False,
    ) -> None:
        super().__init__()
        if pooling not in ("cls", "mean", "pooler"):
            raise ValueError(f"pooling must be cls, mean or pooler, got {pooling!r}")
        self.question_model = question_model
        self.tied = passage_model is question_model
        # A tied encoder is registered once, so its parameters appear once in parameters().
        self.passage_model = None if self.tied else passage_model
        self.question_tokenizer = question_tokenizer
        self.passage_tokenizer = passage_tokenizer
        self.pooling = cast(Literal["cls", "mean", "pooler"], pooling)  # checked above
        self.normalize = normalize
        self.max_length = max_length
        self.bf16 = bf16

    @classmethod
    def from_pretrained(
        cls,
        model: str,
        passage_model: str | None = None,
        tie: bool = False,
        pooling: str = "auto",
        normalize: bool | None = None,
        max_length: int | None = None,
        dropout: float | None = None,
        bf16: bool = False,
    ) -> BiEncoder:
        """Both encoders from ``model`` (``passage_model`` for E_P if given): ``bundled:...``, a
        sentence-transformers, plain BERT or DPR folder. ``pooling="auto"`` and ``normalize=None``
        follow the checkpoint."""
        if tie and passage_model is not None:
            raise ValueError("a tied bi-encoder has one encoder: give no passage_model")
        question, question_tokenizer, layout = _load_dpr_encoder(model, "question", dropout)
        positions = [layout.max_positions]
        if tie:
            passage, passage_tokenizer = question, question_tokenizer
        else:
            passage, passage_tokenizer, passage_layout = _load_dpr_encoder(passage_model or model, "context", dropout)
            positions.append(passage_layout.max_positions)
        fewest = min((p for p in positions if p), default=None)
        if max_length is not None:
            models = model if tie or passage_model is None else f"{model} and {passage_model}"
            check_max_length(max_length, fewest, f"training setting 'max_length' (for {models})")
        default = min(layout.max_length or DEFAULT_MAX_LENGTH, fewest or DEFAULT_MAX_LENGTH)
        return cls(
            question,
            passage,
            question_tokenizer,
            passage_tokenizer,
            pooling=layout.pooling if pooling == "auto" else pooling,
            normalize=layout.normalize if normalize is None else normalize,
            max_length=max_length or default,
            bf16=bf16,
        )

    @property
    def context_model(self) -> torch.nn.Module:
        return self.question_model if self.passage_model is None else self.passage_model

    def tokenize_questions(self, questions: Sequence[str]) -> Any:
        return self.question_tokenizer(
            list(questions), padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )

    def tokenize_passages(self, passages: Sequence[Ctx]) -> Any:
        return _pad(self.passage_tokenizer, self.passage_features(passages))

    def passage_features(self, passages: Sequence[Ctx]) -> list[dict[str, list[int]]]:
        """Each passage's token ids (``title [SEP] text`` when it has a title), truncated, not padded."""
        tokenizer = self.passage_tokenizer
        features: list[dict[str, list[int]] | None] = [None] * len(passages)
        titled = [i for i, c in enumerate(passages) if c.title]
        plain = [i for i, c in enumerate(passages) if not c.title]
        if titled:
            encoded = tokenizer(
                [passages[i].title for i in titled],
                [passages[i].text for i in titled],
                truncation="only_second",
                max_length=self.max_length,
            )
            for n, i in enumerate(titled):
                features[i] = {key: values[n] for key, values in encoded.items()}
        if plain:
            encoded = tokenizer([passages[i].text for i in plain], truncation=True, max_length=self.max_length)
            for n, i in enumerate(plain):
                features[i] = {key: values[n] for key, values in encoded.items()}
        return features  # type: ignore[return-value]  # every position was filled above

    def _encode(self, model: torch.nn.Module, features: Any) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            vectors = pool(model, features, self.pooling)
        vectors = vectors.float()
        return torch.nn.functional.normalize(vectors, dim=-1) if self.normalize else vectors

    def encode_questions(self, features: Any) -> torch.Tensor:
        return self._encode(self.question_model, features)

    def encode_passages(self, features: Any) -> torch.Tensor:
        return self._encode(self.context_model, features)

    def encode_passages_by_length(self, passages: Sequence[Ctx], chunk: int) -> torch.Tensor:
        """The passages' vectors, in their order, encoded ``chunk`` at a time from the shortest, in one
        graph: each pass pads only to its own longest passage. BERT encodes each sequence on its own, so
        the vectors and their gradients are those of one pass."""
        if not passages:
            return self.encode_passages(self.tokenize_passages(passages))
        features = self.passage_features(passages)
        batches = length_sorted_batches([len(f["input_ids"]) for f in features], chunk)
        parts = [self.encode_passages(_pad(self.passage_tokenizer, [features[i] for i in b])) for b in batches]
        order = [i for batch in batches for i in batch]
        inverse = torch.empty(len(order), dtype=torch.long)
        inverse[torch.tensor(order)] = torch.arange(len(order))
        return torch.cat(parts)[inverse]

    def encoder_metadata(self) -> dict[str, Any]:
        """What the ``encoder_config.json`` sidecar records so loaders pool the same way."""
        return {
            "pooling": self.pooling,
            "normalize": self.normalize,
            "max_length": self.max_length,
            "title_mode": "pair",
        }
