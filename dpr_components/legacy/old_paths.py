"""Type paths that components had before the package was laid out by role, kept loadable until
``REMOVED_IN``: the old modules (``dpr_components.ranker``, ``dpr_components.reader``,
``dpr_components.evaluation.evaluators``, ``dpr_components.training.component`` and the package
faces ``dpr_components.retrievers`` and ``dpr_components.embedders`` for ``<package>.<Class>``
paths) register them with
:func:`dpr_components.utils.type_paths.register_legacy_paths`."""

from __future__ import annotations

REMOVED_IN = "0.3.0"  # the release that drops the old paths; saved pipelines name the current ones

# old type path -> current type path
LEGACY_TYPE_PATHS: dict[str, str] = {
    "dpr_components.retrievers.DenseRetriever": "dpr_components.retrievers.dense.DenseRetriever",
    "dpr_components.retrievers.BM25Retriever": "dpr_components.retrievers.bm25.BM25Retriever",
    "dpr_components.ranker.HybridRanker": "dpr_components.rankers.hybrid.HybridRanker",
    "dpr_components.embedders.QuestionEmbedder": "dpr_components.embedders.question.QuestionEmbedder",
    "dpr_components.embedders.PassageEmbedder": "dpr_components.embedders.passage.PassageEmbedder",
    "dpr_components.reader.span_reader.SpanReader": "dpr_components.readers.span_reader.SpanReader",
    "dpr_components.evaluation.evaluators.RetrievalAccuracyEvaluator": "dpr_components.evaluators.retrieval_accuracy.RetrievalAccuracyEvaluator",
    "dpr_components.evaluation.evaluators.AnswerExactMatchF1Evaluator": "dpr_components.evaluators.answer_exact_match.AnswerExactMatchF1Evaluator",
    "dpr_components.training.component.DPRTrainer": "dpr_components.encoder_training.component.DPRTrainer",
}
