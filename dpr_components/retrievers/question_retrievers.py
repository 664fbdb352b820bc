"""What the retrievers that encode the question themselves (``DenseRetriever``, ``HybridRetriever``) share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from haystack import default_to_dict

from dpr_components.embedders.encoder_component import QUERY_ENCODER_SETTINGS
from dpr_components.store_access.serialization import store_to_dict
from dpr_components.utils.devices import device_parameter
from dpr_components.utils.init_parameters import init_parameters

if TYPE_CHECKING:
    from haystack_integrations.components.embedders.dpr.question_embedder import QuestionEmbedder


def question_retriever_dict(retriever: Any, embedder: QuestionEmbedder, settings: str) -> dict[str, Any]:
    """``to_dict`` of a retriever that encodes the question with ``embedder``: its store, the question
    encoder's settings and device, its own space-separated ``settings`` and its filter policy."""
    return default_to_dict(
        retriever,
        document_store=store_to_dict(retriever.document_store),
        **init_parameters(embedder, QUERY_ENCODER_SETTINGS),
        **init_parameters(retriever, settings),
        filter_policy=retriever.filter_policy.value,
        **device_parameter(embedder.device),
    )
