"""``haystack serve``'s typed HTTP API, in process: the models in /openapi.json, ``top_k`` and ``filters``
passed to the pipelines, embeddings only when asked, training as a background job."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from dpr_components.serving.app import build_app
from dpr_components.serving.security import ServerPolicy
from dpr_components.utils.input_files import INPUT_ROOT_ENV
from tests.helpers.corpora import write_two_training_examples
from tests.helpers.serving import write_pipelines

pytestmark = pytest.mark.usefixtures("one_thread")

HAMLET = {"field": "meta.title", "operator": "==", "value": "Hamlet"}
WIDE = "who wrote hamlet, the highest mountain, the nobel prize, where bees live"  # BM25 finds several passages


@pytest.fixture()
def client(
    tmp_path: Path,
    indexed_store: Path,
    tiny_st_dir: Path,
    tiny_reader_dir: Path,
    tiny_bert_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> TestClient:
    """Every pipeline of pipelines/ on the small store with the tiny models, training on."""
    folder, root = tmp_path / "pipelines", tmp_path / "served"
    root.mkdir()
    monkeypatch.setenv(INPUT_ROOT_ENV, str(root))
    write_pipelines(folder, indexed_store, tiny_st_dir, tiny_reader_dir, tiny_bert_dir, tmp_path / "run")
    app, _ = build_app(folder, policy=ServerPolicy(enable_training=True))
    return TestClient(app, base_url="http://127.0.0.1:1416", raise_server_exceptions=False)


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with its ``$ref`` (or a nullable ``anyOf`` of one) followed."""
    if "anyOf" in node:
        node = next(option for option in node["anyOf"] if option.get("type") != "null")
    if "items" in node and "$ref" in node["items"]:
        node = node["items"]
    if "$ref" in node:
        return schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _body_model(schema: dict[str, Any], path: str) -> dict[str, Any]:
    ref = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return _resolve(schema, ref)


def _result_model(schema: dict[str, Any], path: str, method: str = "post", status: str = "200") -> dict[str, Any]:
    ref = schema["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"]
    return _resolve(schema, _resolve(schema, ref)["properties"]["result"])


def test_openapi_has_the_typed_models(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    import dpr_components

    assert (schema["info"]["title"], schema["info"]["version"]) == ("dpr-components", dpr_components.__version__)
    assert {
        "/bm25/run",
        "/dense/run",
        "/search/run",
        "/qa/run",
        "/index/run",
        "/train_dpr/run",
        "/jobs/{job_id}",
    } <= set(schema["paths"])
    search = _body_model(schema, "/bm25/run")
    assert set(search["properties"]) == {"query", "top_k", "filters", "include_embeddings"}
    assert search["required"] == ["query"] and search["properties"]["query"]["type"] == "string"
    assert search["properties"]["include_embeddings"]["default"] is False
    documents = _result_model(schema, "/search/run")["properties"]["documents"]
    assert {"id", "content", "title", "score", "meta", "embedding"} <= set(_resolve(schema, documents)["properties"])
    answers = _result_model(schema, "/qa/run")["properties"]["answers"]
    assert {"data", "score", "document_id", "context", "offsets_in_context"} <= set(
        _resolve(schema, answers)["properties"]
    )
    assert set(_body_model(schema, "/index/run")["properties"]) == {"path", "records"}
    assert set(_result_model(schema, "/index/run")["properties"]) == {"documents_written", "files"}
    assert set(_body_model(schema, "/train_dpr/run")["properties"]) == {"data", "dev_data", "corpus", "output"}
    job = _result_model(schema, "/train_dpr/run", status="202")
    assert {"id", "status", "checkpoint", "metrics"} <= set(job["properties"])
    for path in ("/bm25/run", "/qa/run", "/index/run", "/eval_nq/run", "/train_dpr/run"):
        responses = schema["paths"][path]["post"]["responses"]
        for status in ("400", "422"):
            error = _resolve(schema, responses[status]["content"]["application/json"]["schema"])
            assert error["properties"] == {"detail": {"title": "Detail", "type": "string"}}, (path, status)


@pytest.mark.parametrize("name", ["bm25", "dense", "search"])
def test_top_k_and_filters_reach_the_retriever(client: TestClient, name: str) -> None:
    everything = client.post(f"/{name}/run", json={"query": WIDE}).json()["result"]["documents"]
    assert len(everything) > 2
    two = client.post(f"/{name}/run", json={"query": WIDE, "top_k": 2}).json()["result"]["documents"]
    assert [d["id"] for d in two] == [d["id"] for d in everything[:2]]
    hamlet = client.post(f"/{name}/run", json={"query": WIDE, "filters": HAMLET})
    assert hamlet.status_code == 200, hamlet.text
    found = hamlet.json()["result"]["documents"]
    assert found and {d["title"] for d in found} == {"Hamlet"}
    bad = client.post(
        f"/{name}/run", json={"query": "x", "filters": {"field": "meta.title", "operator": "~~", "value": 1}}
    )
    assert bad.status_code == 400 and "\n" not in bad.json()["detail"], bad.text
    for top_k in (0, -1, 10_001, "many"):
        response = client.post(f"/{name}/run", json={"query": "x", "top_k": top_k})
        assert response.status_code == 422 and response.json()["detail"].startswith("body.top_k: "), response.text


def test_top_k_and_filters_reach_the_reader(client: TestClient) -> None:
    answers = client.post("/qa/run", json={"query": "who wrote hamlet", "top_k": 1}).json()["result"]["answers"]
    assert len(answers) == 1
    answer = answers[0]
    span = answer["offsets_in_context"]
    assert answer["context"][span["start"] : span["end"]] == answer["data"]
    filtered = client.post("/qa/run", json={"query": WIDE, "top_k": 3, "filters": HAMLET})
    assert filtered.status_code == 200, filtered.text
    found = filtered.json()["result"]["answers"]
    assert 0 < len(found) <= 3 and {a["document_title"] for a in found} == {"Hamlet"}


@pytest.mark.parametrize("name", ["bm25", "dense", "search"])
def test_embeddings_only_when_asked(client: TestClient, name: str) -> None:
    plain = client.post(f"/{name}/run", json={"query": "who wrote hamlet", "top_k": 3})
    assert '"embedding"' not in plain.text and "query_embedding" not in plain.text
    asked = client.post(
        f"/{name}/run", json={"query": "who wrote hamlet", "top_k": 3, "include_embeddings": True}
    ).json()
    assert asked["result"]["documents"]
    if name == "dense":  # the dense retriever returns the passage vectors it searched
        assert all(len(d["embedding"]) == 32 for d in asked["result"]["documents"])
    if name != "bm25":  # BM25 makes no query vector
        assert len(asked["result"]["query_embedding"]) == 32


def _wait(client: TestClient, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 180
    while True:
        job = client.get(f"/jobs/{job_id}").json()
        if job["status"] in ("done", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.3)


def test_training_is_a_background_job(client: TestClient, tmp_path: Path) -> None:
    data = write_two_training_examples(tmp_path / "served" / "train.jsonl")
    response = client.post("/train_dpr/run", json={"data": str(data)})
    assert response.status_code == 202, response.text
    job = response.json()["result"]
    assert job["status"] in ("queued", "running") and job["checkpoint"] is None
    done = _wait(client, job["id"])
    assert done["status"] == "done", done
    assert done["metrics"]["steps"] == 1 and Path(done["question_model"]).is_dir() and Path(done["checkpoint"]).is_dir()

    broken = tmp_path / "served" / "broken.jsonl"
    broken.write_text("this is not json\n", encoding="utf-8")
    failed = _wait(client, client.post("/train_dpr/run", json={"data": str(broken)}).json()["result"]["id"])
    assert failed["status"] == "failed" and failed["error"] and "\n" not in failed["error"], failed

    outside = client.post("/train_dpr/run", json={"data": str(tmp_path / "elsewhere.jsonl")})
    assert outside.status_code == 400 and "outside the input root" in outside.json()["detail"]
    assert client.post("/train_dpr/run", json={}).json()["detail"] == "body.data: Field required"
    unknown = client.get("/jobs/0123456789abcdef")
    assert unknown.status_code == 404 and "no training job" in unknown.json()["detail"]


def test_requests_are_strict_and_search_results_go_back_as_they_came(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    for path in ("/bm25/run", "/qa/run", "/index/run", "/eval_nq/run", "/train_dpr/run"):
        assert _body_model(schema, path)["additionalProperties"] is False, path
    found = client.post("/dense/run", json={"query": "who wrote hamlet", "top_k": 2, "include_embeddings": True})
    documents = found.json()["result"]["documents"]
    assert documents and all("embedding" in d for d in documents)
    scored = client.post(
        "/eval_nq/run", json={"ground_truth_answers": [["Shakespeare"]], "retrieved_documents": [documents]}
    )
    assert scored.status_code == 200, scored.text
    lax = {"ground_truth_answers": [["x"]], "retrieved_documents": [[{**documents[0], "rank": 1}]]}
    refused = client.post("/eval_nq/run", json=lax)
    assert refused.status_code == 422 and refused.json()["detail"].startswith("body.retrieved_documents.0.0.rank: ")
