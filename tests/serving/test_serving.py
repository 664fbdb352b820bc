"""``haystack serve``: the pipelines of pipelines/ served by hayhooks, concurrent clients, input root, status codes.

Its security model (origins, Host, API key, body size, logs) is tested in process by
tests/reliability/test_serving_security.py; here a real server also shows it over a socket."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from hayhooks.server.utils.yaml_utils import get_inputs_outputs_from_yaml
from haystack.core.serialization import allow_deserialization_module

from dpr_components.packaged import PIPELINES_DIR as PACKAGED_PIPELINES_DIR
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.serving.app import validation_detail
from dpr_components.serving.deployment import ELASTICSEARCH_URL_ENV, network_overrides, pipeline_files
from dpr_components.serving.security import (
    ServerPolicy,
    check_bind_address,
    host_header_name,
    is_loopback,
    json_body_problem,
    normalize_host_name,
    normalize_origin,
)
from dpr_components.serving.server import default_pipelines_dir
from dpr_components.utils.input_files import INPUT_ROOT_ENV, check_input_path
from haystack_integrations.components.converters.dpr.corpus_reader import CorpusReader
from haystack_integrations.components.trainers.dpr.dpr_trainer import DPRTrainer
from tests.helpers.corpora import write_two_training_examples
from tests.helpers.serving import PIPELINES, served, server_environment, write_pipelines

pytestmark = pytest.mark.usefixtures("one_thread")
SEARCH_PIPELINES = ("bm25", "dense", "search", "search_rerank", "qa", "qa_fast", "qa_rerank")
QUERIES = ["who wrote hamlet", "highest mountain on earth", "nobel prize in physics", "where do bees live"]


# ---- the input root, records, Elasticsearch sections (no server) ---------------------------------


def test_input_paths_must_stay_inside_the_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, outside = tmp_path / "root", tmp_path / "secret.txt"
    root.mkdir()
    outside.write_text("secret")
    (root / "ok.jsonl").write_text("{}")
    (root / "link.jsonl").symlink_to(outside)
    monkeypatch.delenv(INPUT_ROOT_ENV, raising=False)
    assert check_input_path(outside, "corpus file") == str(outside)  # no root: the command line reads any file
    monkeypatch.setenv(INPUT_ROOT_ENV, str(root))
    assert check_input_path(root / "ok.jsonl", "corpus file") == str(root / "ok.jsonl")
    for path, message in [
        (outside, "is outside the input root"),
        ("/etc/passwd", "is outside the input root"),
        (root / ".." / "secret.txt", "contains '..', which is not followed under the input root"),
        (root / "link.jsonl", "goes through a symbolic link, which is not followed under the input root"),
    ]:
        with pytest.raises(ValueError, match=rf"corpus file .* {message} .*root"):
            check_input_path(path, "corpus file")
    with pytest.raises(ValueError, match="goes through a symbolic link"):
        CorpusReader().run(path=str(root / "link.jsonl"))
    with pytest.raises(ValueError, match=r"dev_data .* outside the input root"):
        DPRTrainer(output_dir=str(tmp_path / "run")).run(data=str(root / "ok.jsonl"), dev_data=str(outside))


def test_corpus_reader_takes_records() -> None:
    docs = CorpusReader().run(records=[{"id": "a", "title": "A", "text": "alpha"}, {"id": 7, "text": "seven"}])[
        "documents"
    ]
    assert [(d.id, d.content, d.meta["title"]) for d in docs] == [("a", "alpha", "A"), ("7", "seven", "")]
    assert [
        d.id
        for d in CorpusReader(on_empty="skip").run(records=[{"id": "a", "text": " "}, {"id": "b", "text": "x"}])[
            "documents"
        ]
    ] == ["b"]
    for kwargs, message in [
        ({}, "exactly one of 'path'"),
        ({"path": "c.jsonl", "records": []}, "exactly one of 'path'"),
        ({"records": []}, "records is empty"),
        ({"records": "abc"}, "records must be a list"),
        ({"records": [["a"]]}, r"records\[0\]: expected an object"),
        ({"records": [{"id": "a"}]}, r"records\[0\]: missing field 'text'"),
        ({"records": [{"id": "a", "text": 3}]}, r"records\[0\]: field 'text' must be a string, got int"),
        ({"records": [{"id": " ", "text": "x"}]}, r"records\[0\]: field 'id' is empty"),
        (
            {"records": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]},
            r"records\[1\]: id 'a' already used by records\[0\]",
        ),
        ({"records": [{"id": "a", "text": "  "}]}, r"records\[0\]: document 'a' has no text"),
        ({"records": [{"id": "a", "text": "x" * 1001}]}, r"records\[0\]: document 'a' has"),
        ({"records": [{"id": "a", "text": "x", "body": "y"}]}, r"records\[0\]: unknown fields \['body'\]"),
    ]:
        with pytest.raises(ValueError, match=message):
            CorpusReader().run(**kwargs)


@pytest.mark.parametrize("name", ["search_elasticsearch.yml", "index_elasticsearch.yml"])
def test_elasticsearch_sections_resolve_without_a_server(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    allow_deserialization_module("dpr_components")
    resolved = get_inputs_outputs_from_yaml((PIPELINES / name).read_text(encoding="utf-8"))  # builds, never connects
    inputs = {key: value.targets for key, value in resolved["inputs"].items()}
    outputs = {key: value.path for key, value in resolved["outputs"].items()}
    if name.startswith("search"):
        assert inputs == {"query": ["bm25.query", "dense.query", "ranker.query"]}
        assert outputs == {"documents": "ranker.documents"}
    else:
        assert inputs == {"path": ["reader.path"], "records": ["reader.records"]}
        assert outputs == {"documents_written": "writer.documents_written"}
    spec = yaml.safe_load((PIPELINES / name).read_text(encoding="utf-8"))
    monkeypatch.delenv(ELASTICSEARCH_URL_ENV, raising=False)
    monkeypatch.delenv("DPR_ALLOW_NETWORK", raising=False)
    assert network_overrides(spec) is None  # not served without a server to talk to
    monkeypatch.setenv(ELASTICSEARCH_URL_ENV, "http://es.example:9200")
    expected = ["bm25", "dense", "ranker"] if name.startswith("search") else ["writer"]
    assert network_overrides(spec) == [f"{c}.document_store.hosts=http://es.example:9200" for c in expected]


def test_every_pipeline_declares_inputs_and_outputs() -> None:
    for path in pipeline_files(PIPELINES):
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert spec.get("inputs") and spec.get("outputs"), path.name


# ---- the security policy's pieces (no server) -----------------------------------------------------


def test_pipelines_dir_defaults_to_the_local_folder_else_the_packaged_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_pipelines_dir(None) == PACKAGED_PIPELINES_DIR  # outside a clone: the installed pipelines
    (tmp_path / "pipelines").mkdir()
    assert default_pipelines_dir(None) == Path("pipelines")  # a folder of the user's own wins
    assert default_pipelines_dir("elsewhere") == Path("elsewhere")


def test_bind_addresses() -> None:
    assert [is_loopback(h) for h in ("127.0.0.1", "127.0.0.5", "::1", "localhost", "LocalHost")] == [True] * 5
    assert [is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.5", "box.lan", "localhost.evil.example")] == [
        False
    ] * 5
    check_bind_address("127.0.0.1", has_api_key=False, insecure_no_auth=False)
    check_bind_address("0.0.0.0", has_api_key=True, insecure_no_auth=False)
    check_bind_address("0.0.0.0", has_api_key=False, insecure_no_auth=True)
    with pytest.raises(ValueError, match=r"--host 192.168.1.5 is not a loopback address"):
        check_bind_address("192.168.1.5", has_api_key=False, insecure_no_auth=False)


def test_origins_and_host_names() -> None:
    assert normalize_origin("HTTPS://App.Example:443") == "https://app.example"
    assert normalize_origin("http://localhost:3000") == "http://localhost:3000"
    assert normalize_origin("http://[::1]:8080") == "http://[::1]:8080"
    for bad in (
        "*",
        "null",
        "app.example",
        "https://app.example/",
        "https://app.example/x",
        "ftp://app.example",
        "https://user:pw@app.example",
        "https://app.example:99999",
    ):
        with pytest.raises(ValueError, match="--cors-origin"):
            normalize_origin(bad)
    assert [normalize_host_name(n) for n in ("Box.LAN", "box.lan.", "[::1]", "10.0.0.7")] == [
        "box.lan",
        "box.lan",
        "::1",
        "10.0.0.7",
    ]
    for bad in ("http://box", "box:8080", "*", "", "a b"):
        with pytest.raises(ValueError, match="--allowed-host"):
            normalize_host_name(bad)
    assert [host_header_name(v) for v in ("LOCALHOST:1416", "127.0.0.1", "[::1]:1416", "box.lan.:80", "")] == [
        "localhost",
        "127.0.0.1",
        "::1",
        "box.lan",
        "",
    ]
    assert ServerPolicy(host="0.0.0.0", allowed_hosts=("box.lan",)).host_names() == {
        "localhost",
        "127.0.0.1",
        "::1",
        "box.lan",
    }
    assert "10.0.0.7" in ServerPolicy(host="10.0.0.7").host_names()


def test_json_bodies() -> None:
    assert json_body_problem(b'{"query": "caf\\u00e9 \\ud83d\\ude00", "top_k": 1.5e3}') is None  # a joined pair is fine
    assert (
        json_body_problem(b'{"n": ' + b"1" * 5000 + b"}")
        == "request body: Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits"
    )
    assert json_body_problem(b'"\\ud800"') == (
        "request body: the top-level value is not valid Unicode: a lone surrogate "
        "U+D800 at character 0 (bytes that are not UTF-8, or a broken \\u escape)"
    )


def test_validation_errors_on_one_line() -> None:
    errors = [{"loc": ("body", "query"), "msg": "Input should be a valid string"}, {"loc": ("body", "x"), "msg": "y"}]
    assert validation_detail(errors) == "body.query: Input should be a valid string (and 1 more)"
    assert validation_detail([]) == "invalid request"


# ---- the server -----------------------------------------------------------------------------------


@pytest.fixture()
def server(tmp_path: Path, indexed_store: Path, tiny_st_dir: Path, tiny_reader_dir: Path, tiny_bert_dir: Path):
    folder, root = tmp_path / "pipelines", tmp_path / "served"
    write_pipelines(folder, indexed_store, tiny_st_dir, tiny_reader_dir, tiny_bert_dir, tmp_path / "run")
    with served(folder, tmp_path, "--input-root", str(root), "--enable-training", env=server_environment()) as url:
        yield url, folder, root


def _run_serially(path: Path, inputs: dict[str, Any]) -> dict[str, Any]:
    """``Pipeline.run`` with the inputs as hayhooks maps them, outputs as hayhooks includes them."""
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    data: dict[str, dict[str, Any]] = {}
    for name, value in inputs.items():
        targets = spec["inputs"][name]
        for target in targets if isinstance(targets, list) else [targets]:
            component, socket_name = target.split(".", 1)
            data.setdefault(component, {})[socket_name] = value
    outputs = {target.split(".", 1)[0] for target in spec["outputs"].values()}
    return load_pipeline(path).run(data, include_outputs_from=outputs)


def _ranked(result: dict[str, Any]) -> list[tuple[str, float]]:
    """(id, score) of the documents, or (answer, score, document id) of the answers, of a serial run."""
    # The declared output (documents or answers); a component may also return others, e.g. query_embedding.
    (output,) = [o for o in result.values() if "answers" in o or "documents" in o]
    if "answers" in output:
        return [(a.data, a.score, a.document.id) for a in output["answers"]]
    return [(d.id, d.score) for d in output["documents"]]


def _served_ranked(result: dict[str, Any]) -> list[tuple[str, float]]:
    """The same for a served result (``{"documents": [...]}`` or ``{"answers": [...]}``)."""
    if "answers" in result:
        return [(a["data"], a["score"], a["document_id"]) for a in result["answers"]]
    return [(d["id"], d["score"]) for d in result["documents"]]


@pytest.mark.integration
def test_served_pipelines(server: tuple[str, Path, Path], tmp_path: Path) -> None:
    url, folder, root = server
    status = httpx.get(f"{url}/status").json()
    assert sorted(status["pipelines"]) == [
        "adapt",
        "bm25",
        "dense",
        "eval_nq",
        "eval_squad",
        "index",
        "index_files",
        "qa",
        "qa_fast",
        "qa_rerank",
        "search",
        "search_rerank",
        "train_dpr",
    ]

    # 8 clients at once, each asking every search pipeline several questions: the answers of a serial run.
    expected = {
        (name, q): _ranked(_run_serially(folder / f"{name}.yml", {"query": q}))
        for name in SEARCH_PIPELINES
        for q in QUERIES
    }
    assert all(expected.values())

    def client(number: int) -> list[tuple[tuple[str, str], list]]:
        answers = []
        with httpx.Client(base_url=url, timeout=60) as http:
            for step in range(len(QUERIES) * len(SEARCH_PIPELINES)):
                name = SEARCH_PIPELINES[step % len(SEARCH_PIPELINES)]
                query = QUERIES[(step + number) % len(QUERIES)]
                response = http.post(f"/{name}/run", json={"query": query})
                assert response.status_code == 200, response.text
                answers.append(((name, query), _served_ranked(response.json()["result"])))
        return answers

    with ThreadPoolExecutor(8) as pool:
        results = [item for answers in pool.map(client, range(8)) for item in answers]
    assert len(results) == 8 * len(QUERIES) * len(SEARCH_PIPELINES)
    for key, ranked in results:
        assert [list(r) for r in expected[key]] == [list(r) for r in ranked], key

    # Documents in the request body, then found by search.
    records = [{"id": "zebra", "title": "Zebra", "text": "Zebras are African equines with black and white stripes."}]
    response = httpx.post(f"{url}/index/run", json={"records": records}, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["result"] == {"documents_written": 1}
    found = httpx.post(f"{url}/bm25/run", json={"query": "zebra stripes"}).json()["result"]["documents"]
    assert found[0]["id"] == "zebra#0"

    # The evaluation pipeline scores a posted batch as a serial run does.
    retrieved = httpx.post(f"{url}/bm25/run", json={"query": "who wrote hamlet"}).json()["result"]["documents"]
    batch = {
        "ground_truth_answers": [["Shakespeare"], ["Atlantis"]],
        "retrieved_documents": [retrieved, retrieved[1:]],
        "predicted_answers": ["William Shakespeare", None],
    }
    response = httpx.post(f"{url}/eval_nq/run", json=batch)
    assert response.status_code == 200, response.text
    scores = response.json()["result"]
    assert scores["top_k_accuracy"]["1"] == 50.0
    serial = load_pipeline(folder / "eval_nq.yml").run(
        {
            "retrieval_accuracy": {
                "ground_truth_answers": batch["ground_truth_answers"],
                "retrieved_documents": [[_document(d) for d in docs] for docs in batch["retrieved_documents"]],
            },
            "answer_exact_match": {
                "ground_truth_answers": batch["ground_truth_answers"],
                "predicted_answers": batch["predicted_answers"],
            },
        }
    )
    assert scores["mrr"] == serial["retrieval_accuracy"]["mrr"]
    assert scores["f1"] == serial["answer_exact_match"]["f1"]

    # Training on a file inside the input root, as a background job: two examples, one step.
    data = write_two_training_examples(root / "train.jsonl")
    response = httpx.post(f"{url}/train_dpr/run", json={"data": str(data)}, timeout=30)
    assert response.status_code == 202, response.text
    job = response.json()["result"]
    assert job["status"] in ("queued", "running") and job["pipeline"] == "train_dpr"
    trained = wait_for_job(url, job["id"])
    assert trained["status"] == "done", trained
    assert trained["metrics"]["steps"] == 1 and Path(trained["question_model"]).is_dir()

    # Bad requests.
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"id": "s", "text": "secret"}\n')
    (root / "link.jsonl").symlink_to(secret)
    for name, body, code, message in [
        ("bm25", {"query": "  "}, 400, "the query is empty"),
        ("search", {"query": ""}, 400, "the query is empty"),
        ("bm25", {"query": 5}, 422, "the query must be text"),
        ("bm25", {}, 422, "Field required"),
        ("index", {"path": str(secret)}, 400, "is outside the input root"),
        ("index", {"path": str(root / "link.jsonl")}, 400, "goes through a symbolic link"),
        ("index", {"path": str(root / "missing.jsonl")}, 400, "missing.jsonl"),
        ("index", {}, 400, "exactly one of 'path'"),
        ("index", {"records": [{"id": "x"}]}, 400, "records[0]: missing field 'text'"),
        ("train_dpr", {"data": str(secret)}, 400, "data '" + str(secret) + "' is outside the input root"),
        ("nothing", {"query": "x"}, 404, "Not Found"),
    ]:
        response = httpx.post(f"{url}/{name}/run", json=body, timeout=30)
        assert response.status_code == code, (name, body, response.text)
        assert message in json.dumps(response.json()["detail"]), (name, body, response.text)
        if code == 400:
            assert "Traceback" not in response.text and "\n" not in response.json()["detail"]
    # A fixed set of pipelines: clients can neither deploy their own nor make the server draw one.
    assert httpx.post(f"{url}/deploy-yaml", json={"name": "x", "source_code": "components: {}"}).status_code in (
        404,
        405,
    )
    assert httpx.get(f"{url}/draw/bm25").status_code in (404, 405)

    # Over a socket too, a 10 MB body is refused before it is read, and no query reached the log.
    started = time.monotonic()
    response = httpx.post(
        f"{url}/index/run",
        content=b'{"records": "' + b"x" * 10_000_000 + b'"}',
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 413 and time.monotonic() - started < 10, response.text
    log = (tmp_path / "server.log").read_text(encoding="utf-8")
    assert "Running pipeline 'bm25'" in log and not [q for q in QUERIES if q in log]


def wait_for_job(url: str, job_id: str, seconds: float = 180) -> dict[str, Any]:
    """The training job's record once it is done or failed."""
    deadline = time.monotonic() + seconds
    while True:
        job = httpx.get(f"{url}/jobs/{job_id}").json()
        if job["status"] in ("done", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.5)


def _document(data: dict[str, Any]) -> Any:
    from haystack import Document

    return Document.from_dict(data)
