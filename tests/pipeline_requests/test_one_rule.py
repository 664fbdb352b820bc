"""One rule for the user's mistakes (``dpr_components/pipeline_requests/errors.py``): each bad request of
the table below, sent through the command line (``haystack run``), the HTTP server (``POST /NAME/run``)
and the LangChain retriever, reads as the same one line, each front end's own prefix aside (``error: ``
before it on the command line, the field before a 422's detail) and in each front end's own words for
a field (LangChain's ``k`` for ``top_k``) and for the inputs it takes.

On the command line the request's ``top_k`` is ``--input top_k=N``, as in a batch line or an inputs
file; ``--top-k`` is an option of the command, checked at start with the other bounded options.
LangChain's retriever takes a query, so the requests with a file go through the other two only."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fastapi import FastAPI
from hayhooks import BasePipelineWrapper
from haystack.core.errors import PipelineRuntimeError
from haystack.errors import FilterError
from starlette.testclient import TestClient

from dpr_components.cli.main import main
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.pipeline_requests.errors import Blame, user_error
from dpr_components.serving.routes import add_run_route
from dpr_components.utils.input_files import INPUT_ROOT_ENV
from dpr_components.utils.validation import MAX_QUERY_CHARS
from tests.helpers.corpora import SMALL_CORPUS, write_jsonl
from tests.helpers.front_ends import FrontEnds, front_ends, indexed_pipelines

pytest.importorskip("langchain_core")

from dpr_components.langchain import HaystackRetriever
from dpr_components.langchain.retriever import CALL_INPUTS

pytestmark = pytest.mark.usefixtures("one_thread")

QUERY_PIPELINES = {"bm25": None, "dense": None, "qa": "reranker"}  # the stage whose documents LangChain returns
LONG_QUERY = "a " * MAX_QUERY_CHARS
BAD_OPERATOR = {"field": "meta.title", "operator": "~", "value": "Hamlet"}
NO_OPERATOR = {"field": "meta.title", "value": "Hamlet"}


@dataclass(frozen=True)
class BadRequest:
    """One bad request as each front end sends it, the line it must read as, and the server's status.

    ``line`` may name ``{top_k}`` (LangChain's ``k``), ``{owner}`` and ``{inputs}`` (what the front end
    takes); ``langchain`` is the query and keywords of ``invoke``, ``None`` when LangChain cannot send it."""

    cli: list[str]
    http: dict[str, Any]
    langchain: tuple[Any, dict[str, Any]] | None
    line: str
    status: int
    words: dict[str, str] = field(default_factory=dict)


def _json(value: Any) -> str:
    return json.dumps(value)


def _in_words(text: str, words: dict[str, str]) -> str:
    """``text`` with each ``{name}`` of ``words`` replaced by its word (other braces kept: a filter's)."""
    for name, word in words.items():
        text = text.replace("{" + name + "}", word)
    return text


def _with_query(name: str, cli: str, value: Any, line: str, status: int) -> BadRequest:
    """A search for ``q`` with the input ``name`` set to ``value`` (``cli`` on the command line; LangChain's
    keyword for ``top_k`` is ``k``)."""
    keyword = "k" if name == "top_k" else name
    return BadRequest(
        ["--query", "q", "--input", f"{name}={cli}"], {"query": "q", name: value}, ("q", {keyword: value}), line, status
    )


SEARCHES = {
    "empty query": BadRequest(
        ["--query", " \u200b "],
        {"query": " \u200b "},
        (" \u200b ", {}),
        "the query is empty: give a question or search text (it has no visible character)",
        400,
    ),
    "query too long": BadRequest(
        ["--query", LONG_QUERY],
        {"query": LONG_QUERY},
        (LONG_QUERY, {}),
        f"the query has {len(LONG_QUERY):,} characters; the limit is {MAX_QUERY_CHARS:,}",
        400,
    ),
    "query not text": BadRequest(
        ["--input", "query=5"], {"query": 5}, (5, {}), "the query must be text, got int 5", 422
    ),
    **{
        f"top_k {label}": _with_query("top_k", cli, value, f"{{top_k}} must be a positive integer, got {value!r}", 422)
        for label, cli, value in (("0", "0", 0), ("negative", "-3", -3), ("a bool", "true", True), ("text", '"3"', "3"))
    },
    "unknown filter operator": _with_query(
        "filters",
        _json(BAD_OPERATOR),
        BAD_OPERATOR,
        "unknown filter operator '~': use one of ==, !=, >, >=, <, <=, in, not in or AND, OR, NOT",
        400,
    ),
    "filter without an operator": _with_query(
        "filters",
        _json(NO_OPERATOR),
        NO_OPERATOR,
        "invalid filter {'field': 'meta.title', 'value': 'Hamlet'}: expected a dict with an 'operator'",
        400,
    ),
    "filters not a dict": _with_query("filters", "[1]", [1], "filters must be a Haystack filter dict, got [1]", 422),
    "unknown input": _with_query("nope", "1", 1, "{owner} has no input named 'nope'; its inputs are {inputs}", 422),
}

INDEX_REQUESTS = {
    "file outside the input root": BadRequest(
        ["--input", "path={outside}"],
        {"path": "{outside}"},
        None,
        "corpus file '{outside}' is outside the input root '{root}' ({env}); put the file inside that folder "
        "and give its path",
        400,
    ),
    "missing file": BadRequest(
        ["--input", "path={root}/missing.jsonl"],
        {"path": "{root}/missing.jsonl"},
        None,
        "corpus file {root}/missing.jsonl does not exist",
        400,
    ),
    "a folder for a file": BadRequest(
        ["--input", "path={root}"], {"path": "{root}"}, None, "corpus file {root} is a directory, not a file", 400
    ),
    "a record without text": BadRequest(
        ["--input", 'records=[{"id": "a"}]'],
        {"records": [{"id": "a"}]},
        None,
        "records[0]: missing field 'text'",
        400,
    ),
}


@pytest.fixture(scope="module")
def work(
    tmp_path_factory: pytest.TempPathFactory, tiny_st_dir: Path, tiny_reader_dir: Path, tiny_bert_dir: Path
) -> Path:
    """The query pipelines and the index pipeline of pipelines/ on the tiny models and the small corpus,
    indexed once, in ``pipelines``; ``root`` is the input root, ``outside.jsonl`` a corpus file outside it."""
    work = tmp_path_factory.mktemp("one_rule")
    indexed_pipelines(work, (*QUERY_PIPELINES, "index"), tiny_st_dir, tiny_reader_dir, tiny_bert_dir)
    (work / "root").mkdir()
    write_jsonl(work / "outside.jsonl", SMALL_CORPUS[:1])
    return work


@pytest.fixture(scope="module")
def fronts(work: Path) -> Iterator[FrontEnds]:
    """The front ends over the pipelines, the input root ``work/root`` (also the command line's, by the variable)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(INPUT_ROOT_ENV, str(work / "root"))
        yield front_ends(work / "pipelines", [*QUERY_PIPELINES, "index"], QUERY_PIPELINES, input_root=work / "root")


def _through_cli(path: Path, arguments: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The line ``haystack run`` prints for the request, without its ``error: ``."""
    capsys.readouterr()
    assert main(["run", str(path), *arguments]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err.removeprefix("error: ").rstrip("\n")


def _through_http(client: TestClient, name: str, body: dict[str, Any], status: int) -> str:
    """The server's detail for the request, without the field a 422 names before it."""
    response = client.post(f"/{name}/run", json=body)
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail, detail
    return re.sub(r"^body(\.\w+)?: ", "", detail) if status == 422 else detail


def _through_langchain(retriever: HaystackRetriever, query: Any, keywords: dict[str, Any]) -> str:
    with pytest.raises(Exception) as raised:  # any exception: which one is the front end's own
        retriever.invoke(query, **keywords)
    return str(raised.value)


def _http_inputs(client: TestClient, name: str) -> list[str]:
    """The fields ``POST /name/run`` takes, from its OpenAPI schema."""
    schema = client.get("/openapi.json").json()
    reference = schema["paths"][f"/{name}/run"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    model = schema["components"]["schemas"][reference["$ref"].rsplit("/", 1)[1]]
    return sorted(model["properties"])


@pytest.mark.parametrize("case", list(SEARCHES))
@pytest.mark.parametrize("name", list(QUERY_PIPELINES))
def test_a_bad_search_reads_the_same_through_every_front_end(
    name: str, case: str, fronts: FrontEnds, capsys: pytest.CaptureFixture[str]
) -> None:
    request = SEARCHES[case]
    path = fronts.folder / f"{name}.yml"
    sockets = {socket for sockets in load_pipeline(path).inputs().values() for socket in sockets}
    words = {
        "cli": {"top_k": "top_k", "owner": "the pipeline", "inputs": str(sorted(sockets))},
        "http": {"top_k": "top_k", "owner": "the pipeline", "inputs": str(_http_inputs(fronts.client, name))},
        "langchain": {"top_k": "k", "owner": "HaystackRetriever.invoke", "inputs": str(sorted(CALL_INPUTS))},
    }
    assert request.langchain is not None
    query, keywords = request.langchain
    read = {
        "cli": _through_cli(path, request.cli, capsys),
        "http": _through_http(fronts.client, name, request.http, request.status),
        "langchain": _through_langchain(fronts.retrievers[name], query, keywords),
    }
    assert read == {front: _in_words(request.line, words[front]) for front in read}


@pytest.mark.parametrize("case", list(INDEX_REQUESTS))
def test_a_bad_index_request_reads_the_same_through_the_command_line_and_http(
    case: str, work: Path, fronts: FrontEnds, capsys: pytest.CaptureFixture[str]
) -> None:
    request = INDEX_REQUESTS[case]
    places = {"outside": str(work / "outside.jsonl"), "root": str(work / "root"), "env": INPUT_ROOT_ENV}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(INPUT_ROOT_ENV, str(work / "root"))
        cli = _through_cli(work / "pipelines" / "index.yml", [_in_words(a, places) for a in request.cli], capsys)
    body = {key: _in_words(value, places) if isinstance(value, str) else value for key, value in request.http.items()}
    assert cli == _through_http(fronts.client, "index", body, request.status) == _in_words(request.line, places)


# ---- the rule itself, on the chains Haystack and the components make ------------------------------


class BM25Retriever:
    """Stands for the component class Haystack's wrapper names."""


def _wrapped(error: Exception, *, context_only: bool = False) -> PipelineRuntimeError:
    """``error`` raised inside a component, as Haystack's pipeline wraps it (``from`` the error), or
    with the error as context only (an error raised while handling it)."""
    try:
        try:
            raise error
        except Exception as cause:
            wrapper = PipelineRuntimeError.from_exception("bm25", BM25Retriever, cause)
            if context_only:
                raise wrapper  # noqa: B904 - the context, not the cause
            raise wrapper from cause
    except PipelineRuntimeError as raised:
        return raised


class _Connection:
    host, port = "127.0.0.1", 9200


class _Refused(Exception):
    """A client library's failed connection, which keeps the address on ``conn`` (as urllib3 does)."""

    conn = _Connection()


class _Response:
    status_code = 500
    url = "http://es.example:9200/index/_search?api_key=secret"


class _Answered500(Exception):
    """A client library's error status, which keeps the response (as httpx and requests do)."""

    response = _Response()


def _outer(message: str, cause: BaseException) -> ValueError:
    try:
        raise cause
    except BaseException as error:  # noqa: BLE001 - any cause, the test's own
        try:
            raise ValueError(message) from error
        except ValueError as outer:
            return outer


@pytest.mark.parametrize(
    ("error", "blame", "line"),
    [
        (ValueError("the query is\n empty"), Blame.REQUEST, "the query is empty"),
        (_wrapped(FilterError("unknown filter operator '~'")), Blame.REQUEST, "unknown filter operator '~'"),
        (
            _wrapped(FileNotFoundError(2, "No such file or directory", "c.jsonl")),
            Blame.REQUEST,
            "c.jsonl: no such file or directory",
        ),
        (_outer("corpus file c.jsonl: bad line 3", KeyError("id")), Blame.REQUEST, "corpus file c.jsonl: bad line 3"),
        (_wrapped(PermissionError(13, "Permission denied", "db")), Blame.LOCAL, "db: permission denied"),
        (_wrapped(_Refused("refused")), Blame.UNREACHABLE, None),
        (_wrapped(_Answered500("server error")), Blame.REMOTE, None),
    ],
    ids=["own", "filter-wrapped", "missing-file", "component-wraps-library", "permission", "unreachable", "remote"],
)
def test_the_rule_finds_the_users_error_in_the_chain(error: BaseException, blame: Blame, line: str | None) -> None:
    found = user_error(error)
    assert found is not None and found.blame is blame
    assert "\n" not in found.line and "Component name" not in found.line  # not the wrapper's noise
    if line is not None:
        assert found.line == line
    if blame is Blame.UNREACHABLE:
        assert found.line.startswith("cannot reach the server at 127.0.0.1:9200 (")
    if blame is Blame.REMOTE:
        assert found.line.startswith(
            "component 'bm25' (BM25Retriever): the server at http://es.example:9200/index/_search answered HTTP 500"
        )
        assert "secret" not in found.line  # the URL's query may hold a key
    if isinstance(error, PipelineRuntimeError) and blame in (Blame.REQUEST, Blame.LOCAL):
        assert found.cause is error.__cause__  # the component's own error, raised in the wrapper's place


@pytest.mark.parametrize(
    "error",
    [TypeError("unsupported operand"), _wrapped(KeyError("documents")), _wrapped(ValueError("x"), context_only=True)],
    ids=["type-error", "key-error-wrapped", "context-only"],
)
def test_a_bug_is_no_users_error(error: BaseException) -> None:
    assert user_error(error) is None


class _Raising(BasePipelineWrapper):
    """A served pipeline whose run raises the error it was given."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    def setup(self) -> None:
        pass

    def run_api(self, query: str) -> str:
        """Fail.

        :param query: any text.
        :returns: never.
        """
        raise self.error


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (_wrapped(ValueError("the query is empty")), 400),
        (_wrapped(FileNotFoundError(2, "No such file or directory", "c.jsonl")), 400),
        (_wrapped(_Refused("refused")), 503),
        (_wrapped(_Answered500("server error")), 502),
        (_wrapped(PermissionError(13, "Permission denied", "db")), 500),
        (_wrapped(TypeError("unsupported operand")), 500),
    ],
    ids=["request", "missing-file", "unreachable", "remote", "permission", "bug"],
)
def test_the_server_answers_each_blame_with_its_status(error: BaseException, status: int) -> None:
    app = FastAPI()
    add_run_route(app, "failing", _Raising(error), anyio.CapacityLimiter(1))

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            return await http.post("/failing/run", json={"query": "q"})

    response = asyncio.run(post())
    assert response.status_code == status, response.text
    found = user_error(error)
    detail = response.json()["detail"]
    if status != 500:
        assert found is not None and detail == found.line
    elif found is not None:  # a file this machine cannot read: a server fault, told without the wrapper
        assert detail == f"pipeline failing failed: {found.line}" == "pipeline failing failed: db: permission denied"
