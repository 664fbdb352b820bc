"""Orders documents by the relevance logit of a DPR reader's passage-selection head, which reads
``[CLS] question [SEP] title [SEP] passage`` (long passages in windows; the best window counts).
The reader's last layer is computed for [CLS] alone, all the head reads (the same logit, about a
seventh less work: ``dpr_components/readers/selection.py``)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_to_dict
from haystack.utils import ComponentDevice

from dpr_components.encoders.encoder_settings import Backend, Precision
from dpr_components.readers.inputs import InputSettings
from dpr_components.readers.predict import input_relevance
from dpr_components.readers.reading_component import ReadingComponent
from dpr_components.utils.threads import read_threads, torch_threads
from dpr_components.utils.validation import check_positive_int

DEFAULT_RANKER = "bundled:ranker-minilm"
RETRIEVAL_SCORE = "retrieval_score"


@component
class PassageRanker(ReadingComponent):
    """Orders documents by the relevance logit of a DPR reader's passage-selection head, which reads
    ``[CLS] question [SEP] title [SEP] passage`` (long passages in windows; the best window counts).
    The reader's last layer is computed for [CLS] alone, all the head reads (the same logit, about a
    seventh less work: ``dpr_components/readers/selection.py``).

    Returns the best ``top_k`` documents, each a copy whose ``score`` is that logit (plus
    ``retrieval_weight`` times the score it came with) and whose ``meta["retrieval_score"]`` keeps
    the score it came with. Documents without text are left out. Equal scores keep the incoming order.

    :param model: a ``DPRReader`` folder (``bundled:ranker-minilm``, trained to re-rank; ``bundled:reader-minilm``;
        or one made by ``training/reader/train_reader.py``); a span reader of the same folder shares its weights.
    :param top_k: documents returned.
    :param max_length: tokens per model input; longer passages are read in windows.
    :param stride: tokens shared by consecutive windows of a long passage.
    :param max_question_tokens: longer questions are cut to this many tokens.
    :param max_title_tokens: longer titles are cut to this many tokens.
    :param title_field: the ``meta`` field holding a document's title.
    :param batch_size: rows per forward pass, read shortest first; ``None``: 8.
    :param precision: ``auto`` uses bf16 autocast where the CPU supports it natively, else fp32.
    :param backend: ``torch`` (default) or ``openvino`` (the ``openvino`` extra): the same model run by
        OpenVINO's CPU kernels, in bf16 where the CPU has it natively (docs/benchmarks/reader/ranker_latency.md).
    :param device: Haystack's ``ComponentDevice``; only the CPU (the default) is accepted.
    :param retrieval_weight: w in ``logit + w * retrieval score``: 0 ranks by the model alone; a
        positive w keeps some of the retriever's judgement (every document then needs a score).

    Usage example (after a retriever's top 20, as in ``pipelines/search_rerank.yml``):

    ```python
    from haystack import Document

    ranker = PassageRanker(top_k=1)
    passages = [Document(content="Everest is a mountain."), Document(content="Hamlet is a play by Shakespeare.")]
    ranker.run(query="who wrote hamlet", documents=passages)["documents"][0].content  # the Hamlet passage
    ```
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_RANKER,
        top_k: int = 10,
        max_length: int = 256,
        stride: int = 64,
        max_question_tokens: int = 64,
        max_title_tokens: int = 32,
        title_field: str = "title",
        batch_size: int | None = None,
        precision: Precision = "auto",
        retrieval_weight: float = 0.0,
        backend: Backend = "torch",
        device: ComponentDevice | None = None,
    ) -> None:
        input_settings = InputSettings(max_length, stride, max_question_tokens, max_title_tokens)
        self._init_reading(model, top_k, title_field, precision, input_settings, backend, device)
        self.batch_size = None if batch_size is None else check_positive_int("batch_size", batch_size)
        if isinstance(retrieval_weight, bool) or not isinstance(retrieval_weight, (int, float)):
            raise TypeError(f"retrieval_weight must be a number, got {type(retrieval_weight).__name__}")
        if not math.isfinite(retrieval_weight) or retrieval_weight < 0:
            raise ValueError(f"retrieval_weight must be a finite number >= 0, got {retrieval_weight}")
        self.retrieval_weight = float(retrieval_weight)

    def warm_up(self) -> None:
        """Load the model once (shared with other components of its folder); on OpenVINO also convert
        the selection-only model the ranker runs."""
        ReadingComponent.warm_up(self)  # haystack's @component rebuilds the class: no zero-argument super()
        compile_selection = getattr(self._reader, "compile_selection", None)
        if callable(compile_selection):
            compile_selection()

    def to_dict(self) -> dict[str, Any]:
        """Serialise the init parameters."""
        return default_to_dict(
            self, **self._reading_parameters(), batch_size=self.batch_size, retrieval_weight=self.retrieval_weight
        )

    @component.output_types(documents=list[Document])
    def run(self, query: str, documents: list[Document], top_k: int | None = None) -> dict[str, Any]:
        """Re-rank ``documents`` for ``query``.

        :param query: the question.
        :param documents: the retrieved passages, in any order.
        :param top_k: documents returned; ``None`` keeps the init value.
        :returns: ``documents``: the best ``top_k`` by relevance logit (``score``), with the score they
            came with in ``meta["retrieval_score"]``.
        :raises ValueError: when ``query`` is not text, has no visible character or is too long, or
            ``top_k`` is not a positive integer.
        """
        return self._run_reading(query, documents, top_k)

    @component.output_types(documents=list[Document])
    async def run_async(self, query: str, documents: list[Document], top_k: int | None = None) -> dict[str, Any]:
        """Asynchronous version of :meth:`run`, reading in a worker thread so the event loop is not blocked."""
        return await self._run_reading_async(query, documents, top_k)

    def _fused(self, readable: list[Document], logits: list[float]) -> list[float]:
        """``logit + retrieval_weight * incoming score`` per document (the logits alone at weight 0)."""
        if not self.retrieval_weight:
            return logits
        scores = self._incoming_scores(readable, "retrieval_weight", self.retrieval_weight)
        return [logit + self.retrieval_weight * score for logit, score in zip(logits, scores, strict=True)]

    def _read(self, query: str, readable: list[Document]) -> list[float]:
        """Each document's score: its relevance logit, fused with its incoming score by ``retrieval_weight``."""
        return self._fused(readable, self._score(query, readable))

    def _score(self, query: str, readable: list[Document]) -> list[float]:
        prepared = self._reader_input(query, readable)
        with torch_threads(read_threads()):
            return input_relevance(self._reader, prepared, self.batch_size, self.uses_bf16)

    def _results(
        self,
        query: str,  # noqa: ARG002 - the base class's signature
        readable: list[Document],
        scores: list[float],
        top_k: int,
    ) -> dict[str, Any]:
        """``documents``: the best ``top_k`` by score, each keeping the score it came with in its meta."""
        order = sorted(range(len(readable)), key=lambda i: -scores[i])  # stable: ties keep the incoming order
        ranked = [
            replace(readable[i], score=scores[i], meta={**readable[i].meta, RETRIEVAL_SCORE: readable[i].score})
            for i in order[:top_k]
        ]
        return {"documents": ranked}
