"""Export this project's models to the formats Haystack's own components load.

- :func:`export_sentence_transformers`: a question or passage encoder as a sentence-transformers
  folder (``SentenceTransformersTextEmbedder`` / ``SentenceTransformersDocumentEmbedder``);
- :func:`export_qa_model`: a ``DPRReader``'s span head as a ``BertForQuestionAnswering`` folder
  (``TransformersExtractiveReader``);
- :func:`export_cross_encoder`: a ``PassageRanker``'s selection head as a one-label
  ``BertForSequenceClassification`` folder (``SentenceTransformersSimilarityRanker``).

docs/interop.md says what stays identical and what does not."""

from __future__ import annotations

from typing import Any

__all__ = ["export_cross_encoder", "export_qa_model", "export_sentence_transformers"]


def __getattr__(name: str) -> Any:
    """Import on use: the command line imports this package and should not pay for torch until it exports."""
    if name == "export_cross_encoder":
        from dpr_components.export.cross_encoder import export_cross_encoder

        return export_cross_encoder
    if name == "export_qa_model":
        from dpr_components.export.qa_model import export_qa_model

        return export_qa_model
    if name == "export_sentence_transformers":
        from dpr_components.export.sentence_transformers import export_sentence_transformers

        return export_sentence_transformers
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
