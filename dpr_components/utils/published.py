"""Where the components are published: under ``haystack_integrations.*``, the namespace Haystack
trusts by default, so ``Pipeline.loads`` of a file naming them needs no ``allowed_modules``.

Haystack checks the module a class really comes from (its ``__module__``), not only the path a
pipeline file writes. So each component is defined where it belongs in this package and
:func:`published_in` gives it the module of its public face (as NumPy does for its public
functions); the faces (``haystack_integrations/components/<role>/dpr``) load the class on first use
through :func:`lazy_face`. The path of the defining module (``dpr_components.<role>.<module>.<Class>``)
stays loadable: pipeline files that name it load with ``allowed_modules=["dpr_components"]``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

from dpr_components.utils.type_paths import register_definition_path, register_lazy_class

T = TypeVar("T", bound=type)

NAMESPACE = "haystack_integrations"
RETRIEVERS = "haystack_integrations.components.retrievers.dpr"
EMBEDDERS = "haystack_integrations.components.embedders.dpr"
RANKERS = "haystack_integrations.components.rankers.dpr"
READERS = "haystack_integrations.components.readers.dpr"
EVALUATORS = "haystack_integrations.components.evaluators.dpr"
TRAINERS = "haystack_integrations.components.trainers.dpr"
CONVERTERS = "haystack_integrations.components.converters.dpr"
PREPROCESSORS = "haystack_integrations.components.preprocessors.dpr"
WRITERS = "haystack_integrations.components.writers.dpr"
DOCUMENT_STORES = "haystack_integrations.document_stores.dpr"

# each face module and the classes it publishes, with the module that defines each
FACES: dict[str, dict[str, str]] = {
    CONVERTERS: {
        "CorpusReader": "dpr_components.indexing.components",
    },
    EMBEDDERS: {
        "PassageEmbedder": "dpr_components.embedders.passage",
        "QuestionEmbedder": "dpr_components.embedders.question",
    },
    EVALUATORS: {
        "AnswerExactMatchF1Evaluator": "dpr_components.evaluators.answer_exact_match",
        "RetrievalAccuracyEvaluator": "dpr_components.evaluators.retrieval_accuracy",
    },
    PREPROCESSORS: {
        "DPRPassageSplitter": "dpr_components.indexing.components",
    },
    RANKERS: {
        "HybridRanker": "dpr_components.rankers.hybrid",
        "PassageRanker": "dpr_components.rankers.passage_ranker",
    },
    READERS: {
        "SpanReader": "dpr_components.readers.span_reader",
    },
    RETRIEVERS: {
        "BM25Retriever": "dpr_components.retrievers.bm25",
        "DenseRetriever": "dpr_components.retrievers.dense",
        "HybridRetriever": "dpr_components.retrievers.hybrid",
    },
    TRAINERS: {
        "DPRTrainer": "dpr_components.encoder_training.component",
    },
    WRITERS: {
        "PassageWriter": "dpr_components.indexing.writer",
    },
    DOCUMENT_STORES: {
        "EmbeddedDocumentStore": "dpr_components.document_stores.embedded",
    },
}


def published_in(module: str) -> Callable[[T], T]:
    """Class decorator (placed below ``@component``): the class's type path becomes ``module.<Name>``."""

    def publish(cls: T) -> T:
        register_definition_path(f"{cls.__module__}.{cls.__qualname__}", f"{module}.{cls.__qualname__}")
        cls.__module__ = module
        return cls

    return publish


def lazy_face(face: str) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` of a face module (see :data:`FACES`): a class comes from its
    defining module on first use, so importing a face loads none of the engines behind it. The classes
    are entered in Haystack's component registry under their published path, so that pipeline files
    find them before they are imported."""
    homes = FACES[face]
    if face != DOCUMENT_STORES:
        for name in homes:
            register_lazy_class(f"{face}.{name}")

    def getattr_(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {face!r} has no attribute {name!r}")
        return getattr(importlib.import_module(homes[name]), name)

    def dir_() -> list[str]:
        return sorted(homes)

    return getattr_, dir_, sorted(homes)
