"""Type paths that components had before the package was laid out by role, kept loadable until
``REMOVED_IN``.

A pipeline file names each component by its type path. Haystack's ``Pipeline.from_dict``
imports the module of the path and then looks the full path up in its component registry,
and ``default_from_dict`` refuses data whose ``type`` is not the class's own path. So each old
module registers its old paths (:func:`register_legacy_paths`) with a stand-in that imports the
class from its new home only when a pipeline names it, and the components' ``from_dict`` accept
either path. The old modules are ``dpr_components.ranker``, ``dpr_components.reader``,
``dpr_components.evaluation.evaluators`` and the package faces ``dpr_components.retrievers`` and
``dpr_components.embedders`` (for ``<package>.<Class>`` paths)."""

from __future__ import annotations

import importlib
from typing import Any, TypeVar

from haystack import component, default_from_dict
from haystack.core.serialization import generate_qualified_class_name

T = TypeVar("T")

REMOVED_IN = "0.3.0"  # the release that drops the old paths; saved pipelines name the current ones

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


def _import_type(type_path: str) -> type:
    module_name, class_name = type_path.rsplit(".", 1)
    return getattr(importlib.import_module(module_name), class_name)


def _stand_in(old: str, current: str) -> type:
    """A registry entry for ``old`` that builds the class at ``current`` from pipeline data."""

    class LegacyComponent:
        @classmethod
        def from_dict(cls, data: dict[str, Any]) -> Any:
            return from_dict_any_path(_import_type(current), data)

    LegacyComponent.__name__ = LegacyComponent.__qualname__ = current.rsplit(".", 1)[1]
    LegacyComponent.__doc__ = f"Stands for {current} under its old path {old} (removed in {REMOVED_IN})."
    return LegacyComponent


def register_legacy_paths(module_name: str) -> None:
    """Register the old type paths of module ``module_name`` in Haystack's component registry,
    without importing the classes they name."""
    for old, current in LEGACY_TYPE_PATHS.items():
        if old.rsplit(".", 1)[0] == module_name and old not in component.registry:
            component.registry[old] = _stand_in(old, current)


def from_dict_any_path(cls: type[T], data: dict[str, Any]) -> T:
    """``default_from_dict`` that also accepts an old type path of ``cls``."""
    current = generate_qualified_class_name(cls)
    if LEGACY_TYPE_PATHS.get(data.get("type", "")) == current:
        data = {**data, "type": current}
    return default_from_dict(cls, data)
