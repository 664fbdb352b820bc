"""Type paths that components had before the package was laid out by role, kept loadable.

A pipeline file names each component by its type path. Haystack's ``Pipeline.from_dict``
imports the module of the path and then looks the full path up in its component registry,
and ``default_from_dict`` refuses data whose ``type`` is not the class's own path. So each old
module imports the class from its new home and registers the old path, and the components'
``from_dict`` accept either path."""

from __future__ import annotations

from typing import Any, TypeVar

from haystack import component, default_from_dict
from haystack.core.serialization import generate_qualified_class_name

T = TypeVar("T")

# old type path -> current type path
LEGACY_TYPE_PATHS: dict[str, str] = {
    "dpr_components.retrievers.DenseRetriever": "dpr_components.retrievers.dense.DenseRetriever",
    "dpr_components.retrievers.BM25Retriever": "dpr_components.retrievers.bm25.BM25Retriever",
    "dpr_components.ranker.HybridRanker": "dpr_components.rankers.hybrid.HybridRanker",
    "dpr_components.embedders.QuestionEmbedder": "dpr_components.embedders.question.QuestionEmbedder",
    "dpr_components.embedders.PassageEmbedder": "dpr_components.embedders.passage.PassageEmbedder",
    "dpr_components.reader.span_reader.SpanReader": "dpr_components.readers.span_reader.SpanReader",
    "dpr_components.evaluation.evaluators.RetrievalAccuracyEvaluator":
        "dpr_components.evaluators.retrieval_accuracy.RetrievalAccuracyEvaluator",
    "dpr_components.evaluation.evaluators.AnswerExactMatchF1Evaluator":
        "dpr_components.evaluators.answer_exact_match.AnswerExactMatchF1Evaluator",
}


def register_legacy_paths(*classes: type) -> None:
    """Register every old type path of ``classes`` in Haystack's component registry."""
    for cls in classes:
        current = generate_qualified_class_name(cls)
        for old, new in LEGACY_TYPE_PATHS.items():
            if new == current:
                component.registry[old] = cls


def from_dict_any_path(cls: type[T], data: dict[str, Any]) -> T:
    """``default_from_dict`` that also accepts an old type path of ``cls``."""
    current = generate_qualified_class_name(cls)
    if LEGACY_TYPE_PATHS.get(data.get("type", "")) == current:
        data = {**data, "type": current}
    return default_from_dict(cls, data)
