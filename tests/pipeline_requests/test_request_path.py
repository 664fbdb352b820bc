"""One request path: each packaged pipeline that takes a query accepts the same request (a query alone,
``top_k``, a filter, both) through the command line, the HTTP server and the LangChain retriever, and
each front end returns the same documents or answers (ids and order) for it.

The answer pipelines (qa, qa_rerank) are not LangChain retrievers: LangChain can only return the
documents of a stage (``output=``, here the one the reader reads), so for them it is checked to accept
the same request and to honour its filter and ``top_k``, while the command line and HTTP are compared
answer for answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from dpr_components.cli.main import main
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.pipeline_requests.inputs import request_inputs
from tests.helpers.front_ends import FrontEnds, front_ends, indexed_pipelines

pytest.importorskip("langchain_core")

pytestmark = pytest.mark.usefixtures("one_thread")

DOCUMENT_PIPELINES = ("bm25", "dense", "search", "search_rerank")
ANSWER_PIPELINES = {
    "qa": "reranker",
    "qa_fast": "hybrid",
    "qa_rerank": "reranker",
}  # the stage whose documents LangChain returns
QUERY = "who wrote hamlet, the highest mountain, the nobel prize, where bees live"
TITLES = ["Hamlet", "Marie Curie", "Honey bee"]
FILTER = {"field": "meta.title", "operator": "in", "value": TITLES}
REQUESTS = {
    "query": {},
    "top_k": {"top_k": 2},
    "filter": {"filters": FILTER},
    "top_k+filter": {"top_k": 2, "filters": FILTER},
}
EACH_REQUEST = pytest.mark.parametrize("fields", [REQUESTS[name] for name in sorted(REQUESTS)], ids=sorted(REQUESTS))


@pytest.fixture(scope="module")
def fronts(
    tmp_path_factory: pytest.TempPathFactory, tiny_st_dir: Path, tiny_reader_dir: Path, tiny_bert_dir: Path
) -> FrontEnds:
    """The query pipelines of pipelines/ on the tiny models and the small corpus, indexed once, and their front ends."""
    names = (*DOCUMENT_PIPELINES, *ANSWER_PIPELINES)
    work = tmp_path_factory.mktemp("request_path")
    folder = indexed_pipelines(work, names, tiny_st_dir, tiny_reader_dir, tiny_bert_dir)
    return front_ends(folder, names, {name: ANSWER_PIPELINES.get(name) for name in names})


def _through_cli(path: Path, request: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    command = ["run", str(path), "--query", QUERY, "--json"]
    if "top_k" in request:
        command += ["--top-k", str(request["top_k"])]
    if "filters" in request:
        command += ["--input", "filters=" + json.dumps(request["filters"])]
    capsys.readouterr()
    assert main(command) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _through_http(client: TestClient, name: str, request: dict[str, Any]) -> dict[str, Any]:
    response = client.post(f"/{name}/run", json={"query": QUERY, **request})
    assert response.status_code == 200, response.text
    return response.json()["result"]


@EACH_REQUEST
@pytest.mark.parametrize("name", DOCUMENT_PIPELINES)
def test_documents_are_the_same_through_every_front_end(
    name: str, fields: dict[str, Any], fronts: FrontEnds, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = _through_cli(fronts.folder / f"{name}.yml", fields, capsys)
    (documents,) = [out["documents"] for out in cli.values() if "documents" in out]
    http = _through_http(fronts.client, name, fields)["documents"]
    found = fronts.retrievers[name].invoke(QUERY, k=fields.get("top_k"), filters=fields.get("filters"))
    ids = [d["id"] for d in documents]
    assert ids, cli
    assert [d["id"] for d in http] == ids
    assert [d.id for d in found] == ids
    assert [d["score"] for d in http] == pytest.approx([d["score"] for d in documents])
    if "top_k" in fields:
        assert len(ids) == fields["top_k"]
    if "filters" in fields:
        assert {d["meta"]["title"] for d in documents} <= set(TITLES)


@EACH_REQUEST
@pytest.mark.parametrize("name", sorted(ANSWER_PIPELINES))
def test_answers_are_the_same_through_the_command_line_and_http(
    name: str, fields: dict[str, Any], fronts: FrontEnds, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = _through_cli(fronts.folder / f"{name}.yml", fields, capsys)["reader"]["answers"]
    http = _through_http(fronts.client, name, fields)["answers"]
    assert cli
    assert [(a["data"], a["document_id"]) for a in http] == [(a["data"], (a["document"] or {}).get("id")) for a in cli]
    assert [a["score"] for a in http] == pytest.approx([a["score"] for a in cli])
    spans = [a for a in http if a["data"] is not None]  # besides the reader's "no answer"
    if "top_k" in fields:
        assert len(spans) <= fields["top_k"]
    if "filters" in fields:
        assert {a["document_title"] for a in spans} <= set(TITLES)
    # LangChain: the same request, answered with the documents of the stage the reader reads.
    found = fronts.retrievers[name].invoke(QUERY, k=fields.get("top_k"), filters=fields.get("filters"))
    assert found and len(found) <= fields.get("top_k", len(found))
    if "filters" in fields:
        assert {d.metadata["title"] for d in found} <= set(TITLES)


# Where each request field goes in each packaged query pipeline: the rule every front end follows.
PLACEMENT = {
    "bm25": {"query": ["bm25"], "top_k": ["bm25"], "filters": ["bm25"]},
    "dense": {"query": ["dense"], "top_k": ["dense"], "filters": ["dense"]},
    "search": {"query": ["hybrid"], "top_k": ["hybrid"], "filters": ["hybrid"]},
    "search_rerank": {"query": ["hybrid", "reranker"], "top_k": ["reranker"], "filters": ["hybrid"]},
    "qa": {"query": ["hybrid", "reranker", "reader"], "top_k": ["reader"], "filters": ["hybrid"]},
    "qa_fast": {"query": ["hybrid", "reader"], "top_k": ["reader"], "filters": ["hybrid"]},
    "qa_rerank": {"query": ["hybrid", "reranker", "reader"], "top_k": ["reader"], "filters": ["hybrid"]},
}


@pytest.mark.parametrize("name", sorted(PLACEMENT))
def test_request_fields_go_where_the_rule_says(name: str, fronts: FrontEnds) -> None:
    pipeline = load_pipeline(fronts.folder / f"{name}.yml")
    inputs = request_inputs(pipeline, query="q", top_k=3, filters=FILTER)
    for field, value in (("query", "q"), ("top_k", 3), ("filters", FILTER)):
        assert sorted(c for c, values in inputs.items() if values.get(field) == value) == sorted(PLACEMENT[name][field])


def test_a_field_no_component_takes_is_refused_on_one_line(fronts: FrontEnds) -> None:
    pipeline = load_pipeline(fronts.folder / "bm25.yml")
    with pytest.raises(ValueError, match=r"^the pipeline has no input named 'nope'; its inputs are"):
        request_inputs(pipeline, other={"nope": 1})
    with pytest.raises(ValueError, match="top_k must be a positive integer, got 0"):
        request_inputs(pipeline, query="q", top_k=0)
    # The request's own fields win over the same inputs given among the others; per-component ones over flat.
    assert request_inputs(pipeline, query="q", other={"query": "x", "bm25": {"top_k": 4}, "top_k": 5}) == {
        "bm25": {"query": "q", "top_k": 4}
    }
