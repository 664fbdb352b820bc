"""A dense retriever over a corpus's passages for hard-negative mining (``negatives.SearchIndex``).

Exact inner product over the passage vectors (encoded once through the embedding cache the
indexer uses); the question encoder encodes one question per search. ``skip_top`` leaves out a
question's first passages: the best dense hits for a question are often relevant passages that
merely lack the annotated answer string, and training against them as negatives teaches the
wrong thing (RocketQA, Qu et al. 2021, calls them false negatives)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dpr_components.corpus.passages import Passage
from dpr_components.encoders.batch_encoding import cache_for, encode_passages_cached
from dpr_components.encoders.encoder_settings import Backend, EncoderSettings
from dpr_components.encoders.pairing import encoder_models
from dpr_components.encoders.text_encoder import TextEncoder


class DenseSearchIndex:
    """``search(question, k) -> (positions, scores)`` over fixed passage vectors."""

    def __init__(self, question_encoder: TextEncoder, passage_vectors: np.ndarray, skip_top: int = 0) -> None:
        if skip_top < 0:
            raise ValueError(f"skip_top must be >= 0, got {skip_top}")
        self.question_encoder = question_encoder
        self.passage_vectors = np.ascontiguousarray(passage_vectors, dtype=np.float32)
        self.skip_top = skip_top

    @classmethod
    def for_passages(
        cls,
        model: str,
        passages: Sequence[Passage],
        cache_folder: Path | None = None,
        skip_top: int = 0,
        show_progress: bool = True,
        backend: Backend = "torch",
    ) -> DenseSearchIndex:
        """Encode ``passages`` with the passage side of ``model`` (a pair folder or one encoder) on
        ``backend``; with ``openvino`` the vectors an index pipeline cached for the same encoder are reused."""
        question_model, passage_model = encoder_models(model)
        passage_encoder = TextEncoder(EncoderSettings(model=passage_model, backend=backend), batch_size=64)
        cache = cache_for(passage_encoder, cache_folder) if cache_folder is not None else None
        vectors = encode_passages_cached(
            passage_encoder, [p.text for p in passages], [p.title or None for p in passages], cache, show_progress
        )
        return cls(TextEncoder(EncoderSettings(model=question_model, backend=backend)), vectors, skip_top)

    def __len__(self) -> int:
        return len(self.passage_vectors)

    def search(self, query: str, top_k: int) -> tuple[np.ndarray, np.ndarray]:
        vector = self.question_encoder.encode_questions([query])[0]
        scores = np.einsum("nd,d->n", self.passage_vectors, vector)
        wanted = min(top_k + self.skip_top, len(scores))
        if wanted == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        top = np.argpartition(-scores, wanted - 1)[:wanted]
        top = top[np.argsort(-scores[top], kind="stable")][self.skip_top :]
        return top.astype(np.int64), scores[top]
