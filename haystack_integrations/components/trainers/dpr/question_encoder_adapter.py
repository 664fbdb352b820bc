"""Adapts the question encoder to a store's own passages, without questions (pseudo-queries, a re-ranker as
teacher, distillation against the store's passage vectors)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, cast

from haystack import component, default_to_dict

from dpr_components.encoder_training.pseudo_queries import PseudoQuerySettings
from dpr_components.store_access.serialization import from_dict_with_store, store_to_dict
from dpr_components.utils.init_parameters import init_parameters

if TYPE_CHECKING:
    from dpr_components.encoder_training.adaptation import AdaptationPlan
    from dpr_components.encoder_training.teacher_scoring import FirstStage, Teacher

BUNDLED_QUESTION_ENCODER = "bundled:dpr-minilm-multi/question_encoder"
BUNDLED_RANKER = "bundled:ranker-minilm"
QUERY_SETTINGS = ("min_passage_words", "min_query_words", "max_query_words")
TEACHER_SETTINGS = ("max_length", "stride", "max_question_tokens", "max_title_tokens", "precision", "batch_size")
# the distillation's settings that the adapter fills in itself
FILLED_IN = ("teacher_file", "store", "model", "passage_model")
INIT_PARAMETERS = (
    "output_dir model passage_model query_method max_passages seed query_settings candidates weight top_k "
    "teacher_model teacher_settings settings progress_bar"
)


def _mapping(name: str, value: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"QuestionEncoderAdapter parameter {name!r} must be a mapping, got {value!r}")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise ValueError(f"QuestionEncoderAdapter {name}: unknown {unknown}; known: {', '.join(allowed)}")
    return dict(value)


def _training_names() -> tuple[str, ...]:
    from dpr_components.encoder_training.distillation import DistillationSettings

    return tuple(f.name for f in dataclasses.fields(DistillationSettings) if f.name not in FILLED_IN)


@component
class QuestionEncoderAdapter:
    """Adapts the question encoder to the passages of a store, with no question of the user's (GPL-style).

    Each of up to ``max_passages`` passages gives a pseudo-query (``query_method``: ``crop``, a random span
    of its words, the default, or ``ict``, one of its sentences; seeded); the hybrid over the store (``model``,
    ``weight``, ``candidates``) gives each query its top ``top_k``, which the re-ranker ``teacher_model``
    scores; the question encoder alone learns the teacher's ranking over the store's own passage vectors
    (listwise distillation), so the store is not re-indexed. The result is paired with the store's
    passage encoder: ``--set hybrid.model=OUT/question_encoder`` points a search or QA pipeline at it.

    :param output_dir: run folder (pseudo-queries scored, checkpoints, the result, the report). A run found
        there is resumed; one of other settings is refused.
    :param document_store: the ``EmbeddedDocumentStore`` to adapt to (its passages and vectors are read only).
    :param model: the question encoder to start from, paired with the store's passage encoder.
    :param passage_model: the passage encoder that indexed the store (default: the one ``model`` is paired with).
    :param query_settings: ``min_passage_words``, ``min_query_words``, ``max_query_words``.
    :param teacher_settings: the re-ranker's reading settings (as ``PassageRanker``'s).
    :param settings: the distillation's settings (``batch_size``, ``learning_rate``, ``epochs``,
        ``student_temperature``, ``checkpoint_every``, ...).

    Usage example (``pipelines/adapt.yml`` runs it from the command line):

    ```python
    adapter = QuestionEncoderAdapter(document_store=EmbeddedDocumentStore(path="my_store"))
    result = adapter.run(output_dir="runs/adapted", max_minutes=30)
    result["question_model"]  # runs/adapted/question_encoder
    ```
    """

    def __init__(
        self,
        *,
        document_store: Any,
        output_dir: str = "runs/adapted",
        model: str = BUNDLED_QUESTION_ENCODER,
        passage_model: str | None = None,
        query_method: str = "crop",
        max_passages: int = 10_000,
        seed: int = 0,
        query_settings: dict[str, Any] | None = None,
        candidates: int = 100,
        weight: float = 25.1189,
        top_k: int = 20,
        teacher_model: str = BUNDLED_RANKER,
        teacher_settings: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
        progress_bar: bool = True,
    ) -> None:
        self.document_store, self.output_dir = document_store, output_dir
        self.model, self.passage_model = model, passage_model
        self.query_method, self.max_passages, self.seed = query_method, max_passages, seed
        self.query_settings = _mapping("query_settings", query_settings, QUERY_SETTINGS)
        self.candidates, self.weight, self.top_k = candidates, weight, top_k
        self.teacher_model = teacher_model
        self.teacher_settings = _mapping("teacher_settings", teacher_settings, TEACHER_SETTINGS)
        self.settings = _mapping("settings", settings, _training_names())
        self.progress_bar = progress_bar
        self._queries(max_passages)  # bad settings are refused now, not after the store is read
        self._check_numbers()

    def _queries(self, max_passages: int) -> PseudoQuerySettings:
        return PseudoQuerySettings(self.query_method, max_passages, self.seed, **self.query_settings)  # type: ignore[arg-type]

    def _check_numbers(self) -> None:
        from dpr_components.encoder_training.distillation import DistillationSettings
        from dpr_components.utils.validation import check_finite, check_positive_int

        check_positive_int("candidates", self.candidates)
        check_positive_int("top_k", self.top_k)
        check_finite("weight", self.weight)
        DistillationSettings(teacher_file="", store="", **self.settings)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self, document_store=store_to_dict(self.document_store), **init_parameters(self, INIT_PARAMETERS)
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuestionEncoderAdapter:
        return from_dict_with_store(cls, data)

    def _plan(self, max_passages: int) -> AdaptationPlan:
        from dpr_components.encoder_training.adaptation import AdaptationPlan
        from dpr_components.encoders.pairing import encoder_models

        store_path = str(getattr(self.document_store, "path", "") or "")
        return AdaptationPlan(
            store=self.document_store,
            store_path=store_path,
            model=self.model,
            passage_model=self.passage_model or encoder_models(self.model)[1],
            queries=self._queries(max_passages),
            top_k=self.top_k,
            training=self.settings,
            scorers={
                "first_stage": {"model": self.model, "weight": self.weight, "candidates": self.candidates},
                "teacher": {"model": self.teacher_model, **self.teacher_settings},
            },
        )

    def _scorers(self) -> tuple[FirstStage, Teacher]:
        """The hybrid over the store (returning ``top_k``) and the re-ranker with weight 0 (its logit alone)."""
        from haystack_integrations.components.rankers.dpr.passage_ranker import PassageRanker
        from haystack_integrations.components.retrievers.dpr.hybrid_retriever import HybridRetriever

        hybrid = HybridRetriever(
            document_store=self.document_store,
            model=self.model,
            candidates=self.candidates,
            weight=self.weight,
            top_k=self.top_k,
        )
        hybrid.warm_up()
        teacher = PassageRanker(
            model=self.teacher_model, top_k=self.top_k, retrieval_weight=0.0, **self.teacher_settings
        )
        teacher.warm_up()
        # Haystack's @component hides the run signatures from the type checker; both fit the protocols.
        return cast("FirstStage", hybrid), cast("Teacher", teacher)

    @component.output_types(question_model=str, report=dict)
    def run(
        self, output_dir: str | None = None, max_minutes: float | None = None, max_passages: int | None = None
    ) -> dict[str, Any]:
        """Adapt the question encoder (or resume the adaptation in the run folder).

        :param output_dir: the run folder of this call (default: the component's ``output_dir``).
        :param max_minutes: a time bound: the run stops at the first batch or step after it, with a checkpoint,
            and still writes a question encoder; the same call again goes on from there.
        :param max_passages: passages that give a pseudo-query (default: the component's ``max_passages``).
        :returns: ``question_model``: the adapted question encoder's folder (``OUT/question_encoder``), paired
            with the store's passage encoder; ``report``: what the run did (``OUT/adaptation.json``).
        :raises ValueError: when the store holds no passage or no passage vectors, its vectors were made by
            another passage encoder than the one ``model`` is paired with, no passage gives a pseudo-query, or
            the run folder holds a run of other settings.
        """
        from dpr_components.encoder_training.adaptation import adapt_question_encoder
        from dpr_components.runs.deadline import Deadline

        deadline = Deadline(max_minutes)
        plan = self._plan(self.max_passages if max_passages is None else max_passages)
        folder = output_dir or self.output_dir
        outcome = adapt_question_encoder(plan, self._scorers, folder, deadline, self.progress_bar)
        return {"question_model": outcome.question_encoder, "report": outcome.report}
