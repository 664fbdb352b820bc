"""SQuAD JSON (v1.1 layout; v2's unanswerable questions are skipped) as training examples:
each question with its paragraph as the positive passage.

SQuAD article titles use underscores (``2008_Sichuan_earthquake``); Wikipedia titles, and so
the passages the model will later encode, use spaces, so underscores become spaces."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpr_components.dpr_data.examples import Ctx, LoadedExamples, TrainingExample
from dpr_components.dpr_data.records import (
    MAX_TRAINING_PASSAGE_CHARS,
    MAX_TRAINING_TITLE_CHARS,
    RecordError,
    check_length,
    check_question,
)


def looks_like_squad(data: Any) -> bool:
    return isinstance(data, Mapping) and isinstance(data.get("data"), list)


def _answers(qa: Mapping[str, Any], where: str) -> list[str]:
    raw = qa.get("answers", [])
    if not isinstance(raw, list):
        raise RecordError(f"{where}: field 'answers': expected a list, got {type(raw).__name__}")
    answers = []
    for index, answer in enumerate(raw):
        text = answer.get("text") if isinstance(answer, Mapping) else None
        if not isinstance(text, str):
            raise RecordError(f"{where}: field 'answers[{index}].text': expected a string")
        if text.strip() and text not in answers:
            answers.append(text)
    return answers


def examples_from_squad(data: Any, source: str, limit: int | None = None) -> LoadedExamples:
    """Examples from a parsed SQuAD JSON document; ``source`` names it in errors."""
    if not looks_like_squad(data):
        raise RecordError(f"{source}: not SQuAD JSON (expected an object with a 'data' list)")
    examples: list[TrainingExample] = []
    skipped = 0
    for a, article in enumerate(data["data"]):
        where_article = f"{source}, data[{a}]"
        if not isinstance(article, Mapping) or not isinstance(article.get("paragraphs"), list):
            raise RecordError(f"{where_article}: field 'paragraphs': expected a list")
        title = article.get("title", "")
        if not isinstance(title, str):
            raise RecordError(f"{where_article}: field 'title': expected a string")
        title = check_length(title, where_article, "title", MAX_TRAINING_TITLE_CHARS).replace("_", " ").strip()
        for p, paragraph in enumerate(article["paragraphs"]):
            where_paragraph = f"{where_article}.paragraphs[{p}]"
            if not isinstance(paragraph, Mapping):
                raise RecordError(f"{where_paragraph}: expected an object with 'context' and 'qas'")
            context = paragraph.get("context")
            if not isinstance(context, str) or not context.strip():
                raise RecordError(f"{where_paragraph}: field 'context': expected a non-empty string")
            check_length(context, where_paragraph, "context", MAX_TRAINING_PASSAGE_CHARS)
            qas = paragraph.get("qas")
            if not isinstance(qas, list):
                raise RecordError(f"{where_paragraph}: field 'qas': expected a list")
            for q, qa in enumerate(qas):
                where = f"{where_paragraph}.qas[{q}]"
                if not isinstance(qa, Mapping):
                    raise RecordError(f"{where}: expected an object")
                question = check_question(qa.get("question"), where)
                answers = _answers(qa, where)
                if qa.get("is_impossible") or not answers:
                    skipped += 1  # the paragraph does not answer it: no positive passage
                    continue
                examples.append(
                    TrainingExample(
                        question=question,
                        answers=answers,
                        positives=[Ctx(title=title, text=context.strip())],
                        id=str(qa.get("id") or f"squad-{a}-{p}-{q}"),
                    )
                )
                if limit is not None and len(examples) >= limit:
                    return LoadedExamples(examples, source, skipped)
    return LoadedExamples(examples, source, skipped)
