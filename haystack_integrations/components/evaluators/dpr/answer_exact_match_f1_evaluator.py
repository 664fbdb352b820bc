"""AnswerExactMatchF1Evaluator: SQuAD v1.1 exact match and token F1 as a Haystack evaluator.

``score`` is a fraction in [0, 1]; ``exact_match`` and ``f1`` are in percent, as the DPR paper
reports them."""

from __future__ import annotations

from typing import Any

from haystack import component, default_from_dict, default_to_dict

from dpr_components.evaluation.answer_metrics import exact_match, f1
from dpr_components.evaluators.batch_checks import check_batch


@component
class AnswerExactMatchF1Evaluator:
    """SQuAD v1.1 exact match and token F1 of one predicted answer per question, each the
    maximum over that question's gold answers. A None or blank prediction scores 0.

    Outputs: ``exact_match`` and ``f1`` (percent), ``score`` (exact-match fraction),
    ``individual_scores`` (exact match 1.0/0.0 per question) and ``individual_f1``
    (F1 in [0, 1] per question).

    Usage example (fed a reader's top answers by ``haystack eval pipelines/eval_nq.yml pipelines/qa.yml``):

    ```python
    evaluator = AnswerExactMatchF1Evaluator()
    result = evaluator.run(ground_truth_answers=[["William Shakespeare"]], predicted_answers=["Shakespeare"])
    result["exact_match"], result["f1"]  # (0.0, 66.67)
    ```"""

    @component.output_types(
        exact_match=float, f1=float, score=float, individual_scores=list[float], individual_f1=list[float]
    )
    def run(
        self, ground_truth_answers: list[list[str]], predicted_answers: list[str | None] | None = None
    ) -> dict[str, Any]:
        """Score each prediction against its gold answers.

        :param ground_truth_answers: the gold answers of each question.
        :param predicted_answers: one predicted answer per question (None when the system gave none). Left
            out (a retrieval system in a pipeline that scores both kinds), the evaluator returns no outputs.
        :returns: ``exact_match``, ``f1``, ``score``, ``individual_scores`` and ``individual_f1``.
        """
        if predicted_answers is None:
            return {}
        check_batch(ground_truth_answers, predicted_answers, "predicted_answers")
        ems: list[float] = []
        f1s: list[float] = []
        for golds, prediction in zip(ground_truth_answers, predicted_answers, strict=True):
            # SQuAD's normalisation maps e.g. "the" to "", which would equal an all-article gold.
            if prediction is None or not prediction.strip():
                ems.append(0.0)
                f1s.append(0.0)
                continue
            ems.append(exact_match(prediction, golds))
            f1s.append(f1(prediction, golds))
        n = len(ems)
        return {
            "exact_match": 100.0 * sum(ems) / n,
            "f1": 100.0 * sum(f1s) / n,
            "score": sum(ems) / n,
            "individual_scores": ems,
            "individual_f1": f1s,
        }

    def to_dict(self) -> dict[str, Any]:
        """Serialise (no init parameters)."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnswerExactMatchF1Evaluator:
        """Rebuild from :meth:`to_dict` output."""
        return default_from_dict(cls, data)
