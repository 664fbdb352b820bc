"""Extracts answer spans from the top-k documents of a question (Karpukhin et al. 2020, section 6)."""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Any

from haystack import Document, component, default_to_dict
from haystack.dataclasses import ExtractedAnswer
from haystack.utils import ComponentDevice

from dpr_components.encoders.encoder_settings import Backend, Precision
from dpr_components.readers.inputs import InputSettings
from dpr_components.readers.merging import MergedAnswer, merge_by_text
from dpr_components.readers.model import trained_objective
from dpr_components.readers.no_answer import AnswerSettings
from dpr_components.readers.predict import (
    NonFiniteLogits,
    Ranking,
    ReadSettings,
    SpanPrediction,
    read_input,
)
from dpr_components.readers.reading_component import ReadingComponent
from dpr_components.utils.init_parameters import named_values
from dpr_components.utils.threads import read_threads, torch_threads

DEFAULT_READER = "bundled:reader-minilm"
# The init parameters kept as ``ReadSettings`` fields of the same name.
READ_SETTINGS = (
    "max_answer_length spans_per_passage ranking batch_size rank_prior length_penalty score_prior selection_weight"
)

logger = logging.getLogger(__name__)


def _by_score(answer: ExtractedAnswer) -> float:
    return -answer.score


def _dense_similarity(document: Document) -> float | None:
    """The document's similarity to the question as a dense retriever scored it (hybrid retrieval keeps it)."""
    value = (document.meta or {}).get("dense_score")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@component
class SpanReader(ReadingComponent):
    """Extracts answer spans from the top-k documents of a question (Karpukhin et al. 2020, section 6).

    Each document is read as ``[CLS] question [SEP] title [SEP] passage`` (long ones in overlapping
    windows), all in one padded batch. Passages are selected by a softmax over their [CLS]
    selection logits; the answer is the best span (at most ``max_answer_length`` tokens) of the
    best-selected passage. Returns ``ExtractedAnswer``s, best first, with character offsets into
    ``document.content`` and ``meta`` holding ``passage_score`` (selection probability),
    ``span_score`` (start + end logit), ``span_probability``, ``rank_weight`` (r^-rank_prior) and
    ``score_weight`` (e^(score_prior·(s − the best s)) of the document's incoming score s).

    :param model: a ``DPRReader`` folder (facebook/dpr-reader-* or one made by training/reader/train_reader.py).
    :param top_k: answers returned.
    :param ranking: ``passage`` (DPR: best passage first; score = passage probability) or
        ``combined`` (all spans by passage probability × span probability, which is then the score).
    :param rank_prior: α ≥ 0; weighs the document at 1-based position r of ``documents`` (the
        retriever's order) by r^-α in either ranking. 0 (default) ignores the order, as DPR does;
        ``pipelines/qa_fast.yml`` uses 1 (docs/benchmarks/reader/reader.md), ``qa.yml`` 0.5 after its re-ranker.
    :param score_prior: γ ≥ 0; weighs each document by e^(γ·s), s = its incoming ``score`` (after a
        ``PassageRanker``: its score), in either ranking; 0 (default) ignores the scores.
    :param selection_weight: a ≥ 0; the reader's passage probability counts as P(passage)^a: 1 (default)
        as DPR, 0 leaves passage selection to the priors (``pipelines/qa_rerank.yml`` uses 0.5).
    :param length_penalty: β ≥ 0, a prior for short answers: a span of n tokens scores start + end
        logit − β(n−1) and its ``span_probability`` is P(start)·P(end)·e^(−β(n−1)). 0 (default)
        is DPR's decoding.
    :param spans_per_passage: spans taken from each passage (non-overlapping).
    :param max_answer_length: longest answer in tokens (DPR: 10).
    :param max_length: tokens per model input; longer passages are read in windows.
    :param stride: tokens shared by consecutive windows of a long passage.
    :param max_question_tokens: longer questions are cut to this many tokens.
    :param max_title_tokens: longer titles are cut to this many tokens.
    :param title_field: the ``meta`` field holding a document's title.
    :param batch_size: rows per forward pass, read shortest first; ``None``: 8.
    :param precision: ``auto`` uses bf16 autocast where the CPU supports it natively, else fp32.
    :param backend: ``torch`` (default) or ``openvino``: the same model run by
        OpenVINO's CPU kernels, in bf16 where the CPU has it natively (docs/benchmarks/reader/ranker_latency.md).
    :param device: Haystack's ``ComponentDevice``; only the CPU (the default) is accepted.
    :param no_answer: also return an answer with ``data=None`` whose score is the probability that the
        passages hold no answer (as Haystack's ``ExtractiveReader``); the answers' scores are then
        (1 − P(no answer)) × their share of the candidates' scores. Needs ``no_answer_calibration``.
    :param no_answer_calibration: the logistic model of P(no answer) for this reader and retrieval
        (``{"selection_logit", "span_score", "log_share", "dense_similarity", "bias"}``), fitted by
        training/reader/fit_no_answer.py (docs/no_answer.md).
    :param no_answer_threshold: "no answer" takes first place when P(no answer) is at least this, and
        never otherwise; the other answers keep their order by score.
    :param score_threshold: answers scoring below it are left out (the no-answer is kept).
    :param merge_answers: return each answer string once (texts compared after SQuAD normalisation, as
        exact match compares them), its score the sum of its spans' scores, its document and offsets
        those of its best span, ``meta["merged_spans"]`` how many spans it stands for; "no answer"
        stays apart. False (default): every span on its own.

    Usage example (after any retriever, as in ``pipelines/qa.yml``):

    ```python
    from haystack import Document

    reader = SpanReader(model="bundled:reader-minilm", top_k=1)
    reader.warm_up()
    passages = [Document(content="Hamlet is a tragedy written by William Shakespeare.", meta={"title": "Hamlet"})]
    reader.run(query="who wrote hamlet?", documents=passages)["answers"][0].data  # "William Shakespeare"
    ```
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_READER,
        top_k: int = 5,
        ranking: Ranking = "passage",
        rank_prior: float = 0.0,
        length_penalty: float = 0.0,
        score_prior: float = 0.0,
        selection_weight: float = 1.0,
        spans_per_passage: int = 1,
        max_answer_length: int = 10,
        max_length: int = 256,
        stride: int = 64,
        max_question_tokens: int = 64,
        max_title_tokens: int = 32,
        title_field: str = "title",
        batch_size: int | None = None,
        precision: Precision = "auto",
        backend: Backend = "torch",
        no_answer: bool = False,
        no_answer_calibration: dict[str, float] | None = None,
        no_answer_threshold: float = 0.5,
        score_threshold: float | None = None,
        merge_answers: bool = False,
        device: ComponentDevice | None = None,
    ) -> None:
        if not isinstance(merge_answers, bool):
            raise ValueError(f"merge_answers must be true or false, got {merge_answers!r}")
        self.merge_answers = merge_answers
        self.answer_settings = AnswerSettings.checked(
            no_answer, no_answer_calibration, no_answer_threshold, score_threshold
        )
        input_settings = InputSettings(max_length, stride, max_question_tokens, max_title_tokens)
        self._init_reading(model, top_k, title_field, precision, input_settings, backend, device)
        self.read_settings = ReadSettings(**named_values(locals(), READ_SETTINGS))

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            **self._reading_parameters(),
            **asdict(self.read_settings),
            **self.answer_settings.to_dict(),
            merge_answers=self.merge_answers,
        )

    def warm_up(self) -> None:
        """Load the model once; warns when it was trained for passage selection alone (its spans are random)."""
        if self._reader is not None:
            return
        ReadingComponent.warm_up(self)  # not super(): @component rebuilds the class
        if trained_objective(self.model) == "selection":
            logger.warning(
                "SpanReader model %s was trained for passage selection only (objective=selection in its "
                "reader_info.json): its span head is untrained, so its answers are meaningless; use it "
                "as a PassageRanker",
                self.model,
            )

    @component.output_types(answers=list[ExtractedAnswer])
    def run(self, query: str, documents: list[Document], top_k: int | None = None) -> dict[str, Any]:
        """Extract answers to ``query`` from ``documents`` (loading the model on first use).

        :param query: the question.
        :param documents: the passages to read, in the retriever's order; documents without text are skipped.
        :param top_k: answers returned; ``None`` keeps the init value.
        :returns: ``answers``: up to ``top_k`` ``ExtractedAnswer``s, best first (none when no document has
            text), plus with ``no_answer`` one whose ``data`` is ``None``, ranked by P(no answer).
        :raises ValueError: when ``query`` is not text, has no visible character or is too long, or
            ``top_k`` is not a positive integer.
        """
        return self._run_reading(query, documents, top_k)

    @component.output_types(answers=list[ExtractedAnswer])
    async def run_async(self, query: str, documents: list[Document], top_k: int | None = None) -> dict[str, Any]:
        """Asynchronous version of :meth:`run`, reading in a worker thread so the event loop is not blocked."""
        return await self._run_reading_async(query, documents, top_k)

    def _read(self, query: str, readable: list[Document]) -> list[SpanPrediction]:
        """The model's spans over ``readable``, best first (loads the model on first use)."""
        prior = self.read_settings.score_prior
        scores = self._incoming_scores(readable, "score_prior", prior) if prior else None
        prepared = self._reader_input(query, readable)
        with torch_threads(read_threads()):
            try:
                return read_input(self._reader, prepared, self.read_settings, self.uses_bf16, scores)
            except NonFiniteLogits:
                raise NonFiniteLogits(self.model) from None

    def _results(
        self, query: str, readable: list[Document], predictions: list[SpanPrediction], top_k: int
    ) -> dict[str, Any]:
        ranking = [p.passage_rank_score if self.read_settings.ranking == "passage" else p.score for p in predictions]
        similarities = [_dense_similarity(d) for d in readable] if self.answer_settings.no_answer else []
        scored = self.answer_settings.scores(predictions, ranking, similarities)
        threshold = self.answer_settings.score_threshold
        candidates = (
            merge_by_text(predictions, scored.answers)
            if self.merge_answers
            else [MergedAnswer(p, score) for p, score in zip(predictions, scored.answers, strict=True)]
        )
        answers = [
            self._answer(query, readable[c.prediction.passage_index], c, scored.no_answer, self.merge_answers)
            for c in candidates[:top_k]
            if threshold is None or c.score >= threshold
        ]
        if scored.no_answer is not None:
            meta: dict[str, Any] = {"no_answer": True}
            if scored.features is not None:
                meta["features"] = scored.features
            no_answer = ExtractedAnswer(query=query, score=scored.no_answer, data=None, meta=meta)
            first = self.answer_settings.no_answer_first(scored.no_answer) or not answers
            answers = (
                [no_answer, *answers] if first else [answers[0], *sorted([no_answer, *answers[1:]], key=_by_score)]
            )
        return {"answers": answers}

    @staticmethod
    def _answer(
        query: str, document: Document, candidate: MergedAnswer, no_answer: float | None, merged: bool
    ) -> ExtractedAnswer:
        p = candidate.prediction
        meta: dict[str, Any] = {
            "passage_score": float(p.passage_score),
            "span_score": float(p.span_score),
            "span_probability": float(p.span_probability),
            "rank_weight": float(p.rank_weight),
            "score_weight": float(p.score_weight),
        }
        if no_answer is not None:
            meta["no_answer_probability"] = no_answer
        if merged:
            meta["merged_spans"] = candidate.spans
        return ExtractedAnswer(
            query=query,
            score=float(candidate.score),
            data=p.text,
            document=document,
            document_offset=ExtractedAnswer.Span(p.start, p.end),
            meta=meta,
        )
