"""Parse one DPR-style record (``question``, ``answers``, ``positive_ctxs``, ``negative_ctxs``,
``hard_negative_ctxs``) into a :class:`TrainingExample`, naming the record and field on errors.

Our own JSONL (``nq/train.jsonl``: ``id``, ``question``, ``answers``, ``positive_ctxs``) is the
same shape without negatives. Contexts are ``{"title", "text", ...}``; extra keys (``score``,
``passage_id``, ``psg_id``) are ignored. A Hugging Face ``datasets`` row may hold contexts as a
mapping of columns (``{"title": [...], "text": [...]}``); that is accepted too.

Questions, passage texts and titles are bounded (``MAX_TRAINING_*_CHARS``): encoders read a few
hundred tokens of each, and one pasted megabyte would cost gigabytes of memory to tokenise. The
limits lie well above the real data's longest: SQuAD v1.1 train's longest "question" (a pasted
paragraph) has 25,651 characters, NQ train's longest gold paragraph 34,961, titles under 100."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dpr_components.dpr_data.examples import Ctx, TrainingExample
from dpr_components.utils.validation import check_question_field

CTX_FIELDS = ("positive_ctxs", "negative_ctxs", "hard_negative_ctxs")
MAX_TRAINING_QUESTION_CHARS = 30_000
MAX_TRAINING_PASSAGE_CHARS = 100_000
MAX_TRAINING_TITLE_CHARS = 1_000


class RecordError(ValueError):
    """A training record is malformed; the message names the file, line or index, and field."""


def check_length(text: str, where: str, field: str, limit: int) -> str:
    """``text`` itself when it has at most ``limit`` characters, else a ``RecordError`` naming ``where``, ``field``."""
    if len(text) > limit:
        raise RecordError(f"{where}: field '{field}' has {len(text):,} characters; the limit is {limit:,}")
    return text


def check_question(value: Any, where: str) -> str:
    """The question of a training record, stripped; a ``RecordError`` when it is not non-empty text
    of at most ``MAX_TRAINING_QUESTION_CHARS``."""
    question = check_question_field(value, where, RecordError)
    return check_length(question, where, "question", MAX_TRAINING_QUESTION_CHARS)


def check_passage(text: Any, title: Any, where: str, field: str) -> tuple[str, str]:
    """A passage's text (non-empty) and title (``None`` is empty), stripped and within their limits."""
    if not isinstance(text, str):
        kind = "missing" if text is None else f"a {type(text).__name__}, expected a string"
        raise RecordError(f"{where}: field '{field}.text': {kind}")
    if not text.strip():
        raise RecordError(f"{where}: field '{field}.text' is empty")
    title = "" if title is None else title
    if not isinstance(title, str):
        raise RecordError(f"{where}: field '{field}.title': expected a string, got {type(title).__name__}")
    check_length(text, where, f"{field}.text", MAX_TRAINING_PASSAGE_CHARS)
    check_length(title, where, f"{field}.title", MAX_TRAINING_TITLE_CHARS)
    return text.strip(), title.strip()


def check_answers(value: Any, where: str) -> list[str]:
    """A list of strings (may be empty: answers are only needed for mining and answer masking)."""
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list):
        raise RecordError(f"{where}: field 'answers': expected a list of strings, got {type(value).__name__}")
    for index, answer in enumerate(value):
        if not isinstance(answer, str):
            raise RecordError(f"{where}: field 'answers[{index}]': expected a string, got {type(answer).__name__}")
    return [a for a in value if a.strip()]


def _columns_to_rows(value: Mapping[str, Any], where: str, name: str) -> list[dict[str, Any]]:
    texts = value.get("text")
    if not isinstance(texts, Sequence) or isinstance(texts, str):
        raise RecordError(f"{where}: field '{name}.text': expected a list of strings")
    titles = value.get("title") or [""] * len(texts)
    if len(titles) != len(texts):
        raise RecordError(f"{where}: field '{name}': {len(titles)} titles for {len(texts)} texts")
    return [{"title": title, "text": text} for title, text in zip(titles, texts, strict=True)]


def parse_ctxs(value: Any, where: str, name: str) -> list[Ctx]:
    """A list of ``{"title", "text"}`` objects (or a mapping of columns) as :class:`Ctx` tuples."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        value = _columns_to_rows(value, where, name)
    if not isinstance(value, (list, tuple)):
        raise RecordError(f"{where}: field '{name}': expected a list of passages, got {type(value).__name__}")
    ctxs = []
    for index, item in enumerate(value):
        field = f"{name}[{index}]"
        if not isinstance(item, Mapping):
            raise RecordError(f"{where}: field '{field}': expected an object with 'title' and 'text'")
        text, title = check_passage(item.get("text"), item.get("title"), where, field)
        ctxs.append(Ctx(title=title, text=text))
    return ctxs


def record_id(record: Mapping[str, Any], where: str, default: str) -> str:
    raw = record.get("id")
    if raw is None or raw == "":
        return default
    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
        raise RecordError(f"{where}: field 'id': expected a string or integer, got {type(raw).__name__}")
    return str(raw)


def example_from_record(record: Any, where: str, default_id: str) -> TrainingExample | None:
    """The example in ``record``, or None if it has no positive passage (the caller counts those)."""
    if not isinstance(record, Mapping):
        raise RecordError(f"{where}: expected a JSON object, got {type(record).__name__}")
    if "question" not in record:
        raise RecordError(f"{where}: missing field 'question'")
    if "positive_ctxs" not in record:
        raise RecordError(
            f"{where}: missing field 'positive_ctxs' (a training record needs its gold passages; "
            "a question-only file cannot be used for training)"
        )
    question = check_question(record["question"], where)
    answers = check_answers(record.get("answers", []), where)
    positives, negatives, hard = (parse_ctxs(record.get(name), where, name) for name in CTX_FIELDS)
    if not positives:
        return None
    return TrainingExample(
        question=question,
        answers=answers,
        positives=positives,
        negatives=negatives,
        hard_negatives=hard,
        id=record_id(record, where, default_id),
    )
