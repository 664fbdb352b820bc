"""RetrievalAccuracyEvaluator: DPR's top-k retrieval accuracy and MRR as a Haystack evaluator.

Following Haystack's evaluators, ``score`` is a fraction in [0, 1] and ``individual_scores``
has one value per question; ``top_k_accuracy`` is in percent, as the DPR paper reports it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from dpr_components.evaluation.answer_matching import MatchMode
from dpr_components.evaluation.retrieval_metrics import (
    DEFAULT_MAX_K,
    first_hit_rank_for,
    gold_document_rank,
    mrr_from_ranks,
    top_k_accuracy_from_ranks,
    validate_ks,
)
from dpr_components.evaluators.batch_checks import check_batch, check_gold_ids, passage_texts
from dpr_components.hybrid_fusion import source_document_id
from dpr_components.utils.validation import check_positive_int


@component
class RetrievalAccuracyEvaluator:
    """DPR's top-k retrieval accuracy: a question counts at k if one of its first k documents
    contains a gold answer. Matching uses ``Document.content`` only, never ``meta["title"]``.

    Outputs: ``score`` (fraction of questions with a hit within the largest k),
    ``individual_scores`` (1.0/0.0 per question at the largest k), ``top_k_accuracy``
    ({k: percent}), ``mrr`` (MRR@``mrr_cutoff``, in [0, 1]) and ``first_hit_ranks``
    (1-based rank of the first answer-containing document, None if no retrieved one has an answer).

    Usage example (``pipelines/eval_nq.yml`` holds it, ``haystack eval`` feeds it):

    ```python
    from haystack import Document

    evaluator = RetrievalAccuracyEvaluator(ks=[1, 5])
    result = evaluator.run(
        ground_truth_answers=[["Shakespeare"]],
        retrieved_documents=[[Document(content="Hamlet is a tragedy by William Shakespeare.")]],
    )
    result["top_k_accuracy"]  # {1: 100.0, 5: 100.0}
    ```"""

    def __init__(
        self, ks: Sequence[int] = (1, 5, 20, 100), match_mode: MatchMode = "string", mrr_cutoff: int = DEFAULT_MAX_K
    ) -> None:
        """``match_mode="regex"`` treats the gold answers as regular expressions (CuratedTREC)."""
        if match_mode not in ("string", "regex"):
            raise ValueError(f"match_mode must be 'string' or 'regex', got {match_mode!r}")
        check_positive_int("mrr_cutoff", mrr_cutoff)
        self.ks = validate_ks(ks)
        self.match_mode: MatchMode = match_mode
        self.mrr_cutoff = mrr_cutoff

    @component.output_types(
        score=float,
        individual_scores=list[float],
        top_k_accuracy=dict[int, float],
        mrr=float,
        first_hit_ranks=list[int | None],
    )
    def run(
        self,
        ground_truth_answers: list[list[str]],
        retrieved_documents: list[list[Document]] | None = None,
        ground_truth_document_ids: list[list[str]] | None = None,
    ) -> dict[str, Any]:
        """Score each question's ranked documents against its gold answers (or its gold documents).

        :param ground_truth_answers: the gold answers of each question.
        :param retrieved_documents: each question's documents, best first. Left out (an answer system
            in a pipeline that scores both kinds), the evaluator scores nothing and returns no outputs.
        :param ground_truth_document_ids: the ids of each question's gold documents; when given, a
            retrieved passage hits if it was cut from one of them (``meta["document_id"]``, else its id)
            instead of by answer matching: the rule for NQ train's long answers.
        :returns: ``score``, ``individual_scores``, ``top_k_accuracy``, ``mrr`` and ``first_hit_ranks``.
        """
        if retrieved_documents is None:
            return {}
        check_batch(ground_truth_answers, retrieved_documents, "retrieved_documents")
        if ground_truth_document_ids is not None:
            check_gold_ids(ground_truth_document_ids, len(retrieved_documents))
            pairs = zip(ground_truth_document_ids, retrieved_documents, strict=True)
            ranks = [gold_document_rank(ids, [source_document_id(d) for d in documents]) for ids, documents in pairs]
        else:
            ranks = [
                first_hit_rank_for(answers, passage_texts(documents, index), self.match_mode)
                for index, (answers, documents) in enumerate(
                    zip(ground_truth_answers, retrieved_documents, strict=True)
                )
            ]
        largest_k = self.ks[-1]
        individual = [1.0 if rank is not None and rank <= largest_k else 0.0 for rank in ranks]
        return {
            "score": sum(individual) / len(individual),
            "individual_scores": individual,
            "top_k_accuracy": top_k_accuracy_from_ranks(ranks, self.ks),
            "mrr": mrr_from_ranks(ranks, self.mrr_cutoff),
            "first_hit_ranks": ranks,
        }

    def to_dict(self) -> dict[str, Any]:
        """Serialise the init parameters."""
        return default_to_dict(self, ks=list(self.ks), match_mode=self.match_mode, mrr_cutoff=self.mrr_cutoff)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RetrievalAccuracyEvaluator:
        """Rebuild from :meth:`to_dict` output."""
        return default_from_dict(cls, data)
