"""The request and response models of ``haystack serve`` (its OpenAPI schema shows them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class ErrorDetail(BaseModel):
    """Why a request was refused, on one line."""

    detail: str


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {
        "model": ErrorDetail,
        "description": "Bad request: the one-line reason (empty query, bad filter, file outside the input root)",
    },
    422: {
        "model": ErrorDetail,
        "description": "A field is missing or of the wrong type: the field and the problem, on one line",
    },
}


def _is_none(value: Any) -> bool:
    return value is None


def _left_out_when_empty(description: str) -> Any:
    """A field left out of the JSON when it holds nothing (embeddings not asked for)."""
    return Field(default=None, exclude_if=_is_none, description=description)


class DocumentIn(BaseModel):
    """A retrieved passage sent back for evaluation (as a search returns it)."""

    id: str
    content: str | None = None
    title: str = ""
    score: float | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class DocumentOut(DocumentIn):
    """A retrieved passage: ``embedding`` only when the request set ``include_embeddings``."""

    embedding: list[float] | None = _left_out_when_empty("the passage vector, with include_embeddings")


class SearchResult(BaseModel):
    """The ranked passages; ``query_embedding`` only when asked for and the pipeline makes one."""

    documents: list[DocumentOut]
    query_embedding: list[float] | None = _left_out_when_empty("the query vector, with include_embeddings")


class Offsets(BaseModel):
    """Character offsets ``[start, end)``."""

    start: int
    end: int


class AnswerOut(BaseModel):
    """An answer span: ``context`` is its passage, ``offsets_in_context`` where the span is in it."""

    data: str | None
    score: float
    document_id: str | None = None
    document_title: str = ""
    context: str | None = None
    offsets_in_context: Offsets | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class AnswerResult(BaseModel):
    """The reader's answers, best first."""

    answers: list[AnswerOut]


class IndexResult(BaseModel):
    """How many passages were written to the store."""

    documents_written: int


class EvalResult(BaseModel):
    """The scores of an evaluation pipeline's declared outputs."""

    top_k_accuracy: dict[str, float] | None = None
    mrr: float | None = None
    exact_match: float | None = None
    f1: float | None = None


class TrainingJob(BaseModel):
    """A training run in the background: poll ``GET /jobs/{id}`` until ``status`` is done or failed."""

    id: str
    pipeline: str
    status: Literal["queued", "running", "done", "failed"]
    error: str | None = None
    checkpoint: str | None = None
    question_model: str | None = None
    passage_model: str | None = None
    metrics: dict[str, Any] | None = None
