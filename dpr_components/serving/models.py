"""The request and response models of ``haystack serve`` (its OpenAPI schema shows them).

Requests are strict, as the command line and the components are: no ``true`` for a count, no
``"yes"`` for a boolean, no ``"3"`` for a number, and no field the model does not declare (a typo such
as ``topk`` would otherwise be dropped silently; refused with the command line's line for an input the
pipeline does not take). Integers are accepted where a number is asked for."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dpr_components.pipeline_requests.inputs import unknown_input

STRICT_REQUEST = ConfigDict(strict=True, extra="forbid")


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
        "description": "A field is missing, unknown or of the wrong type (strict: no true for a count, no "
        '"yes" for a boolean): the field and the problem, on one line',
    },
    502: {
        "model": ErrorDetail,
        "description": "A server a component of the pipeline calls (allowed onto the network) answered an HTTP "
        "error status: the component and the status, on one line",
    },
    503: {
        "model": ErrorDetail,
        "description": "Not yet or not now: the pipeline's store was not indexed yet (index first), its "
        "folder was removed or replaced while served, the store's server (Elasticsearch) does not answer, or "
        "the server could not serve the pipeline (its reason, as GET /status gives it); on one line",
    },
}


def _is_none(value: Any) -> bool:
    return value is None


def _left_out_when_empty(description: str) -> Any:
    """A field left out of the JSON when it holds nothing (embeddings not asked for)."""
    return Field(default=None, exclude_if=_is_none, description=description)


class DocumentIn(BaseModel):
    """A retrieved passage sent back for evaluation (as a search returns it)."""

    model_config = STRICT_REQUEST

    id: str
    content: str | None = None
    title: str = ""
    score: float | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    embedding: list[float] | None = Field(
        default=None, description="the passage vector, as a search with include_embeddings returns it (not used)"
    )


class DocumentOut(DocumentIn):
    """A retrieved passage: ``embedding`` only when the request set ``include_embeddings``."""

    model_config = ConfigDict(strict=False, extra="ignore")

    embedding: list[float] | None = _left_out_when_empty("the passage vector, with include_embeddings")


def strict_request(model: type[BaseModel]) -> type[BaseModel]:
    """``model`` (a request model hayhooks derived from a ``run_api``) refusing lax types and unknown fields."""
    namespace = {
        "model_config": STRICT_REQUEST,
        "__module__": model.__module__,
        "__doc__": model.__doc__,
        "_known_fields_only": model_validator(mode="before")(_known_fields_only),
    }
    return type(model.__name__, (model,), namespace)


def _known_fields_only(cls: type[BaseModel], data: Any) -> Any:
    """A body naming a field the request does not take is refused with the one line for it."""
    if isinstance(data, dict):
        unknown = [name for name in data if name not in cls.model_fields]
        if unknown:
            raise ValueError(unknown_input(str(unknown[0]), cls.model_fields))
    return data


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


class FileIndexed(BaseModel):
    """What became of one uploaded file: ``indexed`` (new or changed: its passages written), ``unchanged``
    (the store holds this content already) or ``skipped`` (with the reason)."""

    path: str
    status: Literal["indexed", "unchanged", "skipped"]
    reason: str | None = _left_out_when_empty("why a skipped file was not indexed")


class IndexResult(BaseModel):
    """How many passages were written to the store; for a file upload, what became of each file."""

    documents_written: int
    files: list[FileIndexed] | None = _left_out_when_empty("for a file upload: what became of each file, by name")


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


class StoreReady(BaseModel):
    """Whether a served pipeline's store was indexed (a pipeline reading it answers 503 until then)."""

    ready: bool


class ServerStatus(BaseModel):
    """``GET /status`` (public): the server is up, the pipelines it serves, which stores are ready, and why
    each pipeline it cannot serve now answers 503."""

    status: str = "Up!"
    pipelines: list[str]
    stores: dict[str, StoreReady] = Field(default_factory=dict)
    unavailable: dict[str, str] = Field(
        default_factory=dict,
        description="each pipeline that cannot be served, by name: why (given with the API key when the "
        "server has one); its route answers 503 with that reason (403 for training while it is off)",
    )
    uploads: list[str] = Field(
        default_factory=list,
        description="the index pipelines whose route also takes files (multipart/form-data, fields named 'file')",
    )


class StoreState(StoreReady):
    """A served pipeline's store: ready, and how many passages it holds (null: not ready, or not counted)."""

    passages: int | None = None
    problem: str | None = _left_out_when_empty(
        "why a store that was served cannot be now (its folder removed, renamed or replaced): left out otherwise"
    )


class StoresStatus(BaseModel):
    """``GET /stores`` (needs the API key when the server has one): each served pipeline's store."""

    stores: dict[str, StoreState]


class SourceDocument(BaseModel):
    """A source document as indexed: its passages in order (``meta.passage_index``)."""

    id: str
    title: str
    pipeline: str
    passages: list[DocumentOut]
