"""QuestionEmbedder: the question encoder E_Q as a Haystack component."""

from __future__ import annotations

from typing import Any

from haystack import component, default_to_dict

from dpr_components.embedders.encoder_factory import make_encoder
from dpr_components.encoders import BUNDLED_MINILM, Pooling, Precision
from dpr_components.legacy_paths import from_dict_any_path
from dpr_components.validation import check_query


@component
class QuestionEmbedder:
    """Encodes a question with the question encoder E_Q.

    :param model: ``bundled:all-MiniLM-L6-v2`` or a local checkpoint folder (DPR, sentence-transformers, BERT).
    :param pooling: ``auto`` (from the checkpoint), ``cls``, ``mean`` or ``pooler``.
    :param normalize: unit-normalise vectors; ``None`` follows the checkpoint.
    :param precision: ``auto`` uses bf16 where the CPU supports it natively, else fp32.
    """

    def __init__(
        self,
        model: str = BUNDLED_MINILM,
        pooling: Pooling = "auto",
        normalize: bool | None = None,
        max_length: int | None = None,
        precision: Precision = "auto",
        batch_size: int = 32,
    ) -> None:
        self.model = model
        self.pooling = pooling
        self.normalize = normalize
        self.max_length = max_length
        self.precision = precision
        self.batch_size = batch_size
        self.encoder = make_encoder(model, pooling, normalize, max_length, "none", precision, batch_size)

    def warm_up(self) -> None:
        self.encoder.load()

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self, model=self.model, pooling=self.pooling, normalize=self.normalize, max_length=self.max_length,
            precision=self.precision, batch_size=self.batch_size,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuestionEmbedder:
        return from_dict_any_path(cls, data)

    @component.output_types(embedding=list[float])
    def run(self, query: str) -> dict[str, Any]:
        return {"embedding": self.encoder.encode_questions([check_query(query)])[0].tolist()}
