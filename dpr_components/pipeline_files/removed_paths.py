"""The type paths that stopped loading in 0.3.0, each with the path to write instead.

Until 0.3.0 a component answered to up to three type paths (its published face, its defining module and
an older layout's). Each class now has one, the module it is defined in (``docs/migration.md``); a
pipeline file naming an old one gets one line naming the new one instead of Haystack's "not found"."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

REMOVED_IN = "0.3.0"

# old type path -> the type path that replaces it
REMOVED_TYPE_PATHS: dict[str, str] = {
    "haystack_integrations.components.retrievers.dpr.BM25Retriever": "haystack_integrations.components.retrievers.dpr.bm25_retriever.BM25Retriever",
    "dpr_components.retrievers.bm25.BM25Retriever": "haystack_integrations.components.retrievers.dpr.bm25_retriever.BM25Retriever",
    "dpr_components.retrievers.BM25Retriever": "haystack_integrations.components.retrievers.dpr.bm25_retriever.BM25Retriever",
    "haystack_integrations.components.retrievers.dpr.DenseRetriever": "haystack_integrations.components.retrievers.dpr.dense_retriever.DenseRetriever",
    "dpr_components.retrievers.dense.DenseRetriever": "haystack_integrations.components.retrievers.dpr.dense_retriever.DenseRetriever",
    "dpr_components.retrievers.DenseRetriever": "haystack_integrations.components.retrievers.dpr.dense_retriever.DenseRetriever",
    "haystack_integrations.components.retrievers.dpr.HybridRetriever": "haystack_integrations.components.retrievers.dpr.hybrid_retriever.HybridRetriever",
    "dpr_components.retrievers.hybrid.HybridRetriever": "haystack_integrations.components.retrievers.dpr.hybrid_retriever.HybridRetriever",
    "haystack_integrations.components.embedders.dpr.PassageEmbedder": "haystack_integrations.components.embedders.dpr.passage_embedder.PassageEmbedder",
    "dpr_components.embedders.passage.PassageEmbedder": "haystack_integrations.components.embedders.dpr.passage_embedder.PassageEmbedder",
    "dpr_components.embedders.PassageEmbedder": "haystack_integrations.components.embedders.dpr.passage_embedder.PassageEmbedder",
    "haystack_integrations.components.embedders.dpr.QuestionEmbedder": "haystack_integrations.components.embedders.dpr.question_embedder.QuestionEmbedder",
    "dpr_components.embedders.question.QuestionEmbedder": "haystack_integrations.components.embedders.dpr.question_embedder.QuestionEmbedder",
    "dpr_components.embedders.QuestionEmbedder": "haystack_integrations.components.embedders.dpr.question_embedder.QuestionEmbedder",
    "haystack_integrations.components.rankers.dpr.HybridRanker": "haystack_integrations.components.rankers.dpr.hybrid_ranker.HybridRanker",
    "dpr_components.rankers.hybrid.HybridRanker": "haystack_integrations.components.rankers.dpr.hybrid_ranker.HybridRanker",
    "dpr_components.ranker.HybridRanker": "haystack_integrations.components.rankers.dpr.hybrid_ranker.HybridRanker",
    "haystack_integrations.components.rankers.dpr.PassageRanker": "haystack_integrations.components.rankers.dpr.passage_ranker.PassageRanker",
    "dpr_components.rankers.passage_ranker.PassageRanker": "haystack_integrations.components.rankers.dpr.passage_ranker.PassageRanker",
    "haystack_integrations.components.readers.dpr.SpanReader": "haystack_integrations.components.readers.dpr.span_reader.SpanReader",
    "dpr_components.readers.span_reader.SpanReader": "haystack_integrations.components.readers.dpr.span_reader.SpanReader",
    "dpr_components.reader.span_reader.SpanReader": "haystack_integrations.components.readers.dpr.span_reader.SpanReader",
    "haystack_integrations.components.evaluators.dpr.AnswerExactMatchF1Evaluator": "haystack_integrations.components.evaluators.dpr.answer_exact_match_f1_evaluator.AnswerExactMatchF1Evaluator",
    "dpr_components.evaluators.answer_exact_match.AnswerExactMatchF1Evaluator": "haystack_integrations.components.evaluators.dpr.answer_exact_match_f1_evaluator.AnswerExactMatchF1Evaluator",
    "dpr_components.evaluation.evaluators.AnswerExactMatchF1Evaluator": "haystack_integrations.components.evaluators.dpr.answer_exact_match_f1_evaluator.AnswerExactMatchF1Evaluator",
    "haystack_integrations.components.evaluators.dpr.RetrievalAccuracyEvaluator": "haystack_integrations.components.evaluators.dpr.retrieval_accuracy_evaluator.RetrievalAccuracyEvaluator",
    "dpr_components.evaluators.retrieval_accuracy.RetrievalAccuracyEvaluator": "haystack_integrations.components.evaluators.dpr.retrieval_accuracy_evaluator.RetrievalAccuracyEvaluator",
    "dpr_components.evaluation.evaluators.RetrievalAccuracyEvaluator": "haystack_integrations.components.evaluators.dpr.retrieval_accuracy_evaluator.RetrievalAccuracyEvaluator",
    "haystack_integrations.components.converters.dpr.CorpusReader": "haystack_integrations.components.converters.dpr.corpus_reader.CorpusReader",
    "dpr_components.indexing.components.CorpusReader": "haystack_integrations.components.converters.dpr.corpus_reader.CorpusReader",
    "haystack_integrations.components.preprocessors.dpr.DPRPassageSplitter": "haystack_integrations.components.preprocessors.dpr.dpr_passage_splitter.DPRPassageSplitter",
    "dpr_components.indexing.components.DPRPassageSplitter": "haystack_integrations.components.preprocessors.dpr.dpr_passage_splitter.DPRPassageSplitter",
    "haystack_integrations.components.writers.dpr.PassageWriter": "haystack_integrations.components.writers.dpr.passage_writer.PassageWriter",
    "dpr_components.indexing.writer.PassageWriter": "haystack_integrations.components.writers.dpr.passage_writer.PassageWriter",
    "haystack_integrations.components.trainers.dpr.DPRTrainer": "haystack_integrations.components.trainers.dpr.dpr_trainer.DPRTrainer",
    "dpr_components.encoder_training.component.DPRTrainer": "haystack_integrations.components.trainers.dpr.dpr_trainer.DPRTrainer",
    "dpr_components.training.component.DPRTrainer": "haystack_integrations.components.trainers.dpr.dpr_trainer.DPRTrainer",
    "haystack_integrations.document_stores.dpr.EmbeddedDocumentStore": "haystack_integrations.document_stores.dpr.document_store.EmbeddedDocumentStore",
    "dpr_components.document_stores.embedded.EmbeddedDocumentStore": "haystack_integrations.document_stores.dpr.document_store.EmbeddedDocumentStore",
    "dpr_components.document_stores.EmbeddedDocumentStore": "haystack_integrations.document_stores.dpr.document_store.EmbeddedDocumentStore",
}


def _types(node: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every ``type`` string in pipeline data ``node``, with the parameter path leading to it."""
    if isinstance(node, dict):
        if isinstance(node.get("type"), str):
            yield where, node["type"]
        for key, value in node.items():
            yield from _types(value, f"{where}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _types(value, f"{where}[{index}]")


def removed_path_problem(name: str, data: dict[str, Any]) -> str | None:
    """The line for a component (or an object inside its parameters) whose type path was removed, or None."""
    for where, type_path in _types(data, f"component {name!r}"):
        if type_path in REMOVED_TYPE_PATHS:
            place = where.replace(".init_parameters", "", 1)
            return (
                f"{place}: type {type_path} was removed in {REMOVED_IN}; "
                f"write {REMOVED_TYPE_PATHS[type_path]} (docs/migration.md)"
            )
    return None
