"""Properties of ``haystack serve``'s typed HTTP models, over generated request bodies sent to the real app.

For any body: the answer is a result (200) or a clear error (400 or 422 with a one-line ``detail``),
never a 500; a 422 exactly when a field breaks the strict types (a bool as a count, text as a bool,
an unknown field); and the store changes only when an index request succeeds. The budget is the
``ci`` hypothesis profile of tests/conftest.py (few examples, derandomized)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from dpr_components.serving.app import build_app
from dpr_components.serving.security import ServerPolicy
from dpr_components.serving.wrappers import MAX_TOP_K
from dpr_components.utils.input_files import INPUT_ROOT_ENV
from tests.helpers.corpora import SMALL_CORPUS, write_jsonl
from tests.helpers.models import one_torch_thread
from tests.helpers.serving import PIPELINES, write_pipelines
from tests.reliability.harness import store_snapshot

SEARCHES = ("bm25", "dense", "search")
SEARCH_FIELDS = {"query", "top_k", "filters", "include_embeddings"}
HAMLET = {"field": "meta.title", "operator": "==", "value": "Hamlet"}


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, tiny_st_dir: Path, tiny_reader_dir: Path, tiny_bert_dir: Path
) -> Any:
    """The app on every pipeline of pipelines/ with the tiny models, and the folder of its store."""
    from dpr_components.cli.main import main

    work = tmp_path_factory.mktemp("served_properties")
    store, root = work / "store", work / "served"
    root.mkdir()
    corpus = write_jsonl(work / "corpus.jsonl", SMALL_CORPUS)
    index_args = ["run", str(PIPELINES / "index.yml"), "--input", f"path={corpus}", "--store", str(store)]
    encoder = ["--set", f"embedder.model={tiny_st_dir}", "--set", "embedder.cache_dir=null"]
    with pytest.MonkeyPatch.context() as patch, one_torch_thread():
        assert main([*index_args, *encoder, "--set", "embedder.progress_bar=false"]) == 0
        patch.setenv(INPUT_ROOT_ENV, str(root))
        write_pipelines(work / "pipelines", store, tiny_st_dir, tiny_reader_dir, tiny_bert_dir, work / "run")
        app, _ = build_app(work / "pipelines", policy=ServerPolicy())
        yield TestClient(app, base_url="http://127.0.0.1:1416", raise_server_exceptions=False), store


def _digest(store: Path) -> dict[str, Any]:
    """What the store holds (ids, texts, metadata, vectors), not the derived indexes it may save."""
    return store_snapshot(store)


# ---- strategies -----------------------------------------------------------------------------------

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
QUERIES = st.sampled_from(["who wrote hamlet", "mount everest", "bees", "   ", "x" * 3000]) | st.text(max_size=20)
FILTERS = st.sampled_from([HAMLET, {"field": "meta.title", "operator": "~~", "value": 1}, {}])
# now and then a field no model declares (a typo, a field of another route)
EXTRA = st.one_of(
    st.just({}), st.just({}), st.just({}), st.dictionaries(st.sampled_from(["topk", "records", "k"]), JSON)
)


def _field(typed: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly well-typed values, sometimes any JSON value."""
    return st.one_of(typed, typed, typed, JSON)


SEARCH_BODIES = st.fixed_dictionaries(
    {"query": _field(QUERIES)},
    optional={
        "top_k": _field(st.integers(min_value=-2, max_value=MAX_TOP_K + 2)),
        "filters": _field(FILTERS),
        "include_embeddings": _field(st.booleans()),
    },
).flatmap(lambda body: EXTRA.map(lambda extra: {**body, **extra}))

RECORDS = st.lists(
    st.fixed_dictionaries({"id": st.text(max_size=8), "title": st.text(max_size=8), "text": QUERIES}), max_size=2
)
INDEX_BODIES = st.fixed_dictionaries(
    {}, optional={"path": _field(st.sampled_from(["corpus.jsonl", "../x.jsonl", ""])), "records": _field(RECORDS)}
).flatmap(lambda body: EXTRA.map(lambda extra: {**body, **extra}))

DOCUMENTS = st.lists(
    st.lists(
        st.fixed_dictionaries(
            {"id": st.text(max_size=6)},
            optional={"content": st.text(max_size=20), "score": st.floats(-1, 1), "title": st.text(max_size=6)},
        ),
        max_size=2,
    ),
    max_size=2,
)
ANSWERS = st.lists(st.lists(st.text(max_size=10), max_size=2), max_size=2)
EVAL_BODIES = st.fixed_dictionaries(
    {"ground_truth_answers": _field(ANSWERS)},
    optional={
        "retrieved_documents": _field(DOCUMENTS),
        "predicted_answers": _field(st.lists(st.none() | st.text(max_size=10), max_size=2)),
    },
)


# ---- what the strict models accept ------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _search_types_hold(body: dict[str, Any]) -> bool:
    """Whether ``body`` fits the search model: the field types, the top_k range, no unknown field."""
    top_k = body.get("top_k")
    return (
        set(body) <= SEARCH_FIELDS
        and isinstance(body.get("query"), str)
        and (top_k is None or (_is_int(top_k) and 1 <= top_k <= MAX_TOP_K))
        and (body.get("filters") is None or isinstance(body["filters"], dict))
        and isinstance(body.get("include_embeddings", False), bool)
    )


def _assert_clear(response: Any) -> None:
    """A result or a clear error: 200, or 400/422 with a one-line detail."""
    assert response.status_code in (200, 400, 422), (response.status_code, response.text)
    if response.status_code != 200:
        detail = response.json()["detail"]
        assert isinstance(detail, str) and detail and "\n" not in detail and "Traceback" not in detail, detail


# ---- properties -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SEARCHES)
@given(body=SEARCH_BODIES)
def test_a_search_answers_a_result_or_a_clear_error(served: Any, name: str, body: dict[str, Any]) -> None:
    client, store = served
    before = _digest(store)
    response = client.post(f"/{name}/run", json=body)
    _assert_clear(response)
    assert (response.status_code == 422) == (not _search_types_hold(body)), (body, response.text)
    if response.status_code == 200:
        documents = response.json()["result"]["documents"]
        assert len(documents) <= (body.get("top_k") or MAX_TOP_K)
        assert body.get("include_embeddings") or all("embedding" not in d for d in documents)
    assert _digest(store) == before  # a search never changes the store


@given(body=SEARCH_BODIES)
def test_a_question_answers_a_result_or_a_clear_error(served: Any, body: dict[str, Any]) -> None:
    client, store = served
    body = {k: v for k, v in body.items() if k != "include_embeddings"}  # qa takes no embeddings
    before = _digest(store)
    response = client.post("/qa/run", json=body)
    _assert_clear(response)
    assert (response.status_code == 422) == (not _search_types_hold(body)), (body, response.text)
    if response.status_code == 200:
        assert len(response.json()["result"]["answers"]) <= (body.get("top_k") or MAX_TOP_K)
    assert _digest(store) == before


@given(body=EVAL_BODIES)
def test_an_evaluation_answers_a_result_or_a_clear_error(served: Any, body: dict[str, Any]) -> None:
    client, store = served
    before = _digest(store)
    response = client.post("/eval_nq/run", json=body)
    _assert_clear(response)
    if not isinstance(body["ground_truth_answers"], list):
        assert response.status_code == 422, (body, response.text)
    assert _digest(store) == before


@given(body=INDEX_BODIES)
def test_an_index_request_changes_the_store_only_when_it_succeeds(served: Any, body: dict[str, Any]) -> None:
    client, store = served
    before = _digest(store)
    response = client.post("/index/run", json=body)
    _assert_clear(response)
    if set(body) - {"path", "records"} or any(isinstance(body.get(k), bool | int | float) for k in ("path", "records")):
        assert response.status_code == 422, (body, response.text)
    if response.status_code != 200 or response.json()["result"]["documents_written"] == 0:
        assert _digest(store) == before, (body, response.text)
