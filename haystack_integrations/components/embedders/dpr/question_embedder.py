"""QuestionEmbedder: the question encoder E_Q as a Haystack component."""

from __future__ import annotations

import asyncio
from typing import Any

from haystack import component, default_to_dict
from haystack.utils import ComponentDevice

from dpr_components.embedders.encoder_component import ENCODER_SETTINGS, EncoderComponent
from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.encoders.encoder_settings import Backend, Pooling, Precision
from dpr_components.encoders.model_locks import model_lock
from dpr_components.utils.devices import device_parameter
from dpr_components.utils.init_parameters import init_parameters
from dpr_components.utils.validation import check_query


@component
class QuestionEmbedder(EncoderComponent):
    """Encodes a question with the question encoder E_Q.

    :param model: ``bundled:all-MiniLM-L6-v2`` or a local checkpoint folder (DPR, sentence-transformers, BERT).
    :param pooling: ``auto`` (from the checkpoint), ``cls``, ``mean`` or ``pooler``.
    :param normalize: unit-normalise vectors; ``None`` follows the checkpoint.
    :param precision: ``auto`` uses bf16 where the CPU supports it natively, else fp32.
    :param backend: ``auto`` (plain torch: one question at a time starts fastest there,
        docs/benchmarks/encoding/question_backends.md), ``torch`` or ``openvino`` (faster per question once
        converted, a few seconds at start-up: for long-running batch work; plain and sentence-transformers
        checkpoints only, not DPR-layout ones such as ``bundled:dpr-minilm-multi/question_encoder``).
    :param device: Haystack's ``ComponentDevice``; only the CPU (the default) is accepted.

    Usage example (any Haystack embedding retriever can follow it):

    ```python
    from haystack import Pipeline
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever

    pipeline = Pipeline()
    pipeline.add_component("embedder", QuestionEmbedder(model="bundled:dpr-minilm-multi/question_encoder"))
    pipeline.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store))
    pipeline.connect("embedder.embedding", "retriever.query_embedding")
    pipeline.run({"embedder": {"text": "who wrote hamlet?"}})
    ```
    """

    def __init__(
        self,
        *,
        model: str = BUNDLED_MINILM,
        backend: Backend = "auto",
        pooling: Pooling = "auto",
        normalize: bool | None = None,
        max_length: int | None = None,
        precision: Precision = "auto",
        batch_size: int = 32,
        device: ComponentDevice | None = None,
    ) -> None:
        # Questions are encoded at query time: plain torch where it gives the same vectors, so a
        # command line answering one question does not import transformers.
        self._init_encoder(
            model,
            pooling,
            normalize,
            max_length,
            precision,
            batch_size,
            "none",
            plain_torch=True,
            backend=backend,
            device=device,
        )
        self.backend = backend

    def to_dict(self) -> dict[str, Any]:
        settings = init_parameters(self, f"{ENCODER_SETTINGS} backend")
        return default_to_dict(self, **settings, **device_parameter(self.device))

    @component.output_types(embedding=list[float])
    def run(self, text: str | None = None, query: str | None = None) -> dict[str, Any]:
        """Encode a question with E_Q. Give exactly one of ``text`` and ``query``.

        :param text: the question, under the input name of Haystack's text embedders (so this
            component replaces one, e.g. before ``InMemoryEmbeddingRetriever``).
        :param query: the question, under the name our pipelines and the ``--query`` option use.
        :returns: ``embedding``: the question's vector.
        :raises ValueError: when both or neither of ``text`` and ``query`` are given, or the question
            is not text, has no visible character or is too long.
        """
        return {"embedding": self._embed(self._question(text, query))}

    @component.output_types(embedding=list[float])
    async def run_async(self, text: str | None = None, query: str | None = None) -> dict[str, Any]:
        """Asynchronous version of :meth:`run`, encoding in a worker thread so the event loop is not blocked."""
        return {"embedding": await asyncio.to_thread(self._embed, self._question(text, query))}

    @staticmethod
    def _question(text: str | None, query: str | None) -> str:
        if (text is None) == (query is None):
            raise ValueError("QuestionEmbedder needs the question as either 'text' or 'query' (exactly one of them)")
        return check_query(text if text is not None else query)

    def _embed(self, question: str) -> list[float]:
        with model_lock(("encoder", self.encoder.settings)):
            return self.encoder.encode_questions([question])[0].tolist()
