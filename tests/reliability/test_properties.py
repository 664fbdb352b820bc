"""Generated inputs (``hypothesis``): filters, question files, ``--set`` and ``--input``.

Each property says what must hold for every input: a correct result or one clear error line,
never a traceback, and never a change to a store that was not asked to change. The examples are
derandomized with a fixed budget, so CI runs the same cases every time in a few seconds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from haystack import Document
from haystack.errors import FilterError
from haystack.utils.filters import document_matches_filter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpr_components.evaluation.questions import load_questions
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.reliability.harness import PIPELINES, CliResult, cli, store_snapshot

BUDGET = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

DOCUMENTS = [
    Document(id="a", content="alpha", meta={"year": 2001, "lang": "en", "score": 0.5, "draft": False}),
    Document(id="b", content="beta", meta={"year": 2005, "lang": "de", "score": 2.5, "draft": True}),
    Document(id="c", content="gamma", meta={"year": 2010, "lang": "en"}),
    Document(id="d", content="delta", meta={"lang": "fr", "score": -1.0}),
]
VALUES = {
    "meta.year": st.integers(1990, 2020),
    "meta.lang": st.sampled_from(["en", "de", "fr", "es"]),
    "meta.score": st.floats(-2, 3, allow_nan=False),
    "meta.draft": st.booleans(),
    "id": st.sampled_from(["a", "b", "c", "d", "z"]),
}


@st.composite
def comparisons(draw: st.DrawFn) -> dict[str, Any]:
    """A well-typed comparison on one field, as Haystack's filter syntax defines it."""
    field = draw(st.sampled_from(sorted(VALUES)))
    values = VALUES[field]
    if field in ("meta.lang", "id", "meta.draft"):
        operator = draw(st.sampled_from(["==", "!=", "in", "not in"]))
    else:
        operator = draw(st.sampled_from(["==", "!=", ">", ">=", "<", "<=", "in", "not in"]))
    value = draw(st.lists(values, max_size=3)) if operator in ("in", "not in") else draw(values)
    return {"field": field, "operator": operator, "value": value}


FILTERS = st.recursive(
    comparisons(),
    lambda children: st.builds(
        lambda operator, conditions: {"operator": operator, "conditions": conditions},
        st.sampled_from(["AND", "OR", "NOT"]),
        st.lists(children, min_size=1, max_size=3),
    ),
    max_leaves=6,
)
JSON_LEAVES = st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats() | st.text(max_size=20)
ANY_JSON = st.recursive(
    JSON_LEAVES,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def filter_store(tmp_path_factory: pytest.TempPathFactory) -> EmbeddedDocumentStore:
    store = EmbeddedDocumentStore(path=str(tmp_path_factory.mktemp("filters") / "store"))
    store.write_documents(DOCUMENTS)
    return store


@pytest.mark.reliability(category="generated inputs", expect="correct result")
@BUDGET
@given(filters=FILTERS)
def test_well_typed_filters_agree_with_haystack(filter_store: EmbeddedDocumentStore, filters: dict[str, Any]) -> None:
    """Generated nested filters (AND/OR/NOT over ==, !=, <, >, in, not in) select what Haystack's own matcher selects"""
    found = {d.id for d in filter_store.filter_documents(filters)}
    expected = {d.id for d in DOCUMENTS if document_matches_filter(filters, d)}
    assert found == expected, filters


@pytest.mark.reliability(category="generated inputs", expect="clear error")
@BUDGET
@given(filters=ANY_JSON)
def test_any_json_as_filters(filter_store: EmbeddedDocumentStore, filters: Any) -> None:
    """Generated JSON of any shape given as filters: a result or a FilterError of one line, the store unchanged"""
    try:
        filter_store.filter_documents(filters)
    except (FilterError, ValueError) as error:
        message = str(error)
        assert message.strip() and "\n" not in message, repr(message)
    assert filter_store.count_documents() == len(DOCUMENTS)


QUESTION_LINES = st.one_of(
    st.builds(json.dumps, st.dictionaries(st.sampled_from(["id", "question", "answers", "gold_ids"]), ANY_JSON)),
    st.builds(lambda q, a: f"{q}\t{a}", st.text(max_size=30), st.text(max_size=30)),
    st.text(max_size=40),
)


@pytest.mark.reliability(category="generated inputs", expect="clear error")
@BUDGET
@given(lines=st.lists(QUESTION_LINES, min_size=0, max_size=4))
def test_generated_question_files(tmp_path_factory: pytest.TempPathFactory, lines: list[str]) -> None:
    """Generated question files (JSON lines of any fields, TSV, free text): questions or one error line naming the file"""
    path = tmp_path_factory.mktemp("questions") / "questions.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    try:
        examples = load_questions(path)
    except ValueError as error:
        message = str(error)
        assert "\n" not in message and str(path) in message, repr(message)
        return
    for example in examples:
        assert example.question.strip() and isinstance(example.answers, list)
        assert all(isinstance(answer, str) for answer in example.answers)


ASSIGNMENT_TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=25)
OPTION_VALUES = st.one_of(
    st.builds(json.dumps, ANY_JSON),
    st.integers(-5, 200).map(str),
    st.sampled_from(["true", "false", "null", "", " ", "1e309", "NaN", "[]", "{}"]),
    ASSIGNMENT_TEXT,
)


def _assignments(keys: list[str]) -> st.SearchStrategy[str]:
    """``KEY=VALUE`` texts: mostly keys the pipeline has, with values of every kind, and some free text."""
    return st.one_of(
        st.builds(lambda key, value: f"{key}={value}", st.sampled_from(keys), OPTION_VALUES),
        st.builds(lambda key, value: f"{key}={value}", ASSIGNMENT_TEXT, OPTION_VALUES),
        ASSIGNMENT_TEXT,
    )


SET_OPTIONS = _assignments(
    [
        "bm25.top_k",
        "bm25.scale_score",
        "bm25.filters",
        "bm25.filter_policy",
        "bm25.document_store.path",
        "bm25",
        "bm25.",
    ]
)
INPUT_OPTIONS = _assignments(["query", "top_k", "filters", "bm25.top_k", "bm25.filters", "bm25.query", "scale_score"])


def store_state(folder: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """What a store holds (its documents) and the bytes of its index files; SQLite's own files are left
    out of the second part, as a reader's checkpoint of the write-ahead log rewrites them unchanged."""
    files = {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.name.startswith("documents.sqlite")
    }
    return store_snapshot(folder), files


def _one_line_or_success(result: CliResult) -> None:
    assert "Traceback" not in result.err, result.err
    if result.code != 0:
        errors = [line for line in result.err.splitlines() if line.startswith("error: ")]
        assert result.code == 2 and len(errors) == 1, (result.code, result.err)


@pytest.mark.reliability(category="generated inputs", expect="clear error")
@BUDGET
@given(assignments=st.lists(SET_OPTIONS, max_size=2), inputs=st.lists(INPUT_OPTIONS, max_size=2))
def test_generated_set_and_input_options(indexed_store: Path, assignments: list[str], inputs: list[str]) -> None:
    """Generated --set and --input options on a BM25 search: a result or one error line, the store unchanged"""
    arguments: list[str] = ["run", str(PIPELINES / "bm25.yml"), "-q", "who wrote hamlet", "--store", str(indexed_store)]
    assert cli(*arguments).code == 0  # the first search builds the derived BM25 files; the store stays as it is after
    before = store_state(indexed_store)
    for assignment in assignments:
        arguments += ["--set", assignment]
    for value in inputs:
        arguments += ["--input", value]
    _one_line_or_success(cli(*arguments))
    assert store_state(indexed_store) == before
