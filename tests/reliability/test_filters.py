"""Filters: hostile field names, malformed conditions and type mismatches give a FilterError
(one line through the command line); valid filters, nested ones included, give exact results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from haystack import Document
from haystack.errors import FilterError
from haystack.utils.filters import document_matches_filter

from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.reliability.harness import PIPELINES, assert_clear_error, assert_success, cases, cli

DOCUMENTS = [
    Document(
        id="a",
        content="alpha text",
        meta={
            "year": 2001,
            "lang": "en",
            "topic": {"name": "maths", "level": 2},
            "published": "2020-03-01",
            "título": "uno",
        },
    ),
    Document(
        id="b",
        content="beta text",
        meta={"year": 2005, "lang": "de", "topic": {"name": "art", "level": 5}, "published": "2021-07-15T10:00:00"},
    ),
    Document(id="c", content="gamma text", meta={"year": "2010", "lang": "en", "tags": ["x", "y"]}),
]
ONLY_A = {"field": "id", "operator": "==", "value": "a"}

HOSTILE_FIELDS = {
    "single quote": "meta.x' OR 1=1 --",
    "double quote": 'meta.x" OR 1=1 --',
    "closing parenthesis": "meta.x') OR ('1'='1",
    "comment": "meta.lang -- comment",
    "semicolon": "meta.lang; DROP TABLE documents",
    "dollar": "meta.$",
    "bracket": "meta.tags[0]",
    "empty": "",
    "meta only": "meta.",
    "very long": "meta." + "a" * 5000,
    "sub-select": "meta.x') OR id IN (SELECT id FROM documents) OR ('",
    "recursive CTE": "meta.x') OR (WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r) SELECT max(i) FROM r) OR ('",
    "newline": "meta.lang\n",
    "leading digit": "meta.1st",
    "embedding": "embedding",
    "not a string": 42,
}


@pytest.fixture()
def store() -> EmbeddedDocumentStore:
    store = EmbeddedDocumentStore()
    store.write_documents(DOCUMENTS)
    return store


def _ids(store: EmbeddedDocumentStore, filters: dict[str, Any]) -> set[str]:
    return {d.id for d in store.filter_documents(filters)}


@pytest.mark.timeout(30)
@cases("field", HOSTILE_FIELDS)
@pytest.mark.reliability(category="filters", expect="clear error")
def test_hostile_field_name_is_refused(store: EmbeddedDocumentStore, field: Any) -> None:
    """A filter field name carrying SQL (quotes, comments, sub-selects, a recursive CTE) or no valid key"""
    condition = {"field": field, "operator": "==", "value": "x"}
    for filters in (
        condition,
        {"operator": "AND", "conditions": [ONLY_A, condition]},
        {"operator": "OR", "conditions": [ONLY_A, condition]},
    ):
        with pytest.raises(FilterError, match="field"):
            store.filter_documents(filters)
        with pytest.raises(FilterError):
            store.bm25_retrieval("text", filters=filters)
    assert store.count_documents() == 3


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "field", ["meta.x' OR 1=1 --", "meta.x') OR id IN (SELECT id FROM documents) OR ('"], ids=["quote", "sub-select"]
)
@pytest.mark.reliability(category="filters", expect="clear error")
def test_hostile_field_name_through_the_command_line(indexed_store: Path, field: str) -> None:
    """A BM25 search with --input bm25.filters whose field name carries SQL"""
    filters = json.dumps(
        {
            "operator": "AND",
            "conditions": [
                {"field": "meta.title", "operator": "==", "value": "Hamlet"},
                {"field": field, "operator": "!=", "value": "x"},
            ],
        }
    )
    result = cli(
        "run", PIPELINES / "bm25.yml", "--store", indexed_store, "-q", "mountain", "--input", f"bm25.filters={filters}"
    )
    assert_clear_error(result, "invalid filter field")


@pytest.mark.reliability(category="filters", expect="correct result")
def test_filter_through_the_command_line_excludes_what_it_should(indexed_store: Path) -> None:
    """A BM25 search restricted by a metadata filter returns only the matching passages"""
    filters = json.dumps({"field": "meta.title", "operator": "==", "value": "Hamlet"})
    result = cli(
        "run",
        PIPELINES / "bm25.yml",
        "--store",
        indexed_store,
        "-q",
        "Hamlet mountain Everest",
        "--input",
        f"bm25.filters={filters}",
        "--json",
    )
    assert_success(result)
    documents = next(iter(json.loads(result.out).values()))["documents"]
    assert [d["id"] for d in documents] == ["hamlet#0"]


@pytest.mark.reliability(category="filters", expect="correct result")
def test_nested_meta_filter(store: EmbeddedDocumentStore) -> None:
    """A filter on a nested metadata field (meta.topic.level)"""
    filters = {
        "operator": "AND",
        "conditions": [
            {"field": "meta.topic.level", "operator": ">=", "value": 2},
            {"field": "meta.topic.name", "operator": "!=", "value": "art"},
        ],
    }
    assert _ids(store, filters) == {d.id for d in DOCUMENTS if document_matches_filter(filters, d)} == {"a"}


@pytest.mark.reliability(category="filters", expect="correct result")
def test_unicode_field_name(store: EmbeddedDocumentStore) -> None:
    """A filter on a metadata key with non-ASCII letters (meta.título)"""
    assert _ids(store, {"field": "meta.título", "operator": "==", "value": "uno"}) == {"a"}
    assert _ids(store, {"field": "meta.título", "operator": "!=", "value": "uno"}) == {"b", "c"}


@pytest.mark.reliability(category="filters", expect="correct result")
def test_iso_dates_compare_as_dates(store: EmbeddedDocumentStore) -> None:
    """An ordering filter with an ISO date on metadata holding dates in two ISO spellings"""
    for operator, value in ((">", "2020-12-31"), ("<=", "2020-03-01T00:00:00"), (">=", "2021-07-15 10:00")):
        filters = {"field": "meta.published", "operator": operator, "value": value}
        assert _ids(store, filters) == {d.id for d in DOCUMENTS if document_matches_filter(filters, d)}


@pytest.mark.reliability(category="filters", expect="correct result")
def test_list_metadata_never_equals_its_json_text(store: EmbeddedDocumentStore) -> None:
    """An equality filter whose string value spells a stored list as JSON"""
    assert _ids(store, {"field": "meta.tags", "operator": "==", "value": '["x","y"]'}) == set()
    assert _ids(store, {"field": "meta.tags", "operator": "in", "value": ['["x","y"]']}) == set()


BAD_FILTERS = {
    "number against non-date string": (
        {"field": "meta.year", "operator": ">", "value": "recent"},
        "ISO formatted dates",
    ),
    "list value for ordering": ({"field": "meta.year", "operator": "<", "value": [2001]}, "cannot compare with a list"),
    "dict value for ordering": (
        {"field": "meta.year", "operator": ">=", "value": {"a": 1}},
        "cannot compare with a dict",
    ),
    "number against text content": ({"field": "content", "operator": ">", "value": 3}, "cannot compare its text"),
    "unknown operator": ({"field": "meta.year", "operator": "~=", "value": 1}, "unknown filter operator"),
    "operator not a string": ({"field": "meta.year", "operator": ["=="], "value": 1}, "unknown filter operator"),
    "missing value": ({"field": "meta.year", "operator": "=="}, "needs a 'value'"),
    "missing field": ({"operator": "==", "value": 1}, "needs a 'field'"),
    "missing operator": ({"field": "meta.year", "value": 1}, "expected a dict with an 'operator'"),
    "missing conditions": ({"operator": "AND"}, "non-empty list of 'conditions'"),
    "conditions not a list": ({"operator": "OR", "conditions": {"field": "id"}}, "non-empty list of 'conditions'"),
    "condition not a dict": ({"operator": "NOT", "conditions": ["id"]}, "expected a dict"),
    "dict value for equality": ({"field": "meta.lang", "operator": "==", "value": {"en": 1}}, "unsupported type dict"),
    "in with a string": ({"field": "meta.lang", "operator": "in", "value": "en"}, "needs a list value"),
    "in with nested lists": ({"field": "meta.lang", "operator": "in", "value": [["en"]]}, "unsupported type list"),
    "integer beyond 64 bits": ({"field": "meta.year", "operator": "==", "value": 10**30}, "does not fit in 64 bits"),
    "not a number": ({"field": "meta.year", "operator": "<", "value": float("nan")}, "not a finite number"),
    "filters not a dict": (["meta.year"], "expected a dict"),
}


@cases("filters, fragment", BAD_FILTERS)
@pytest.mark.reliability(category="filters", expect="clear error")
def test_malformed_filter(store: EmbeddedDocumentStore, filters: Any, fragment: str) -> None:
    """A malformed filter (wrong operator, missing key, value of the wrong type)"""
    with pytest.raises(FilterError, match=fragment):
        store.filter_documents(filters)
    with pytest.raises(FilterError, match=fragment):
        store.bm25_retrieval("text", filters=filters)


@pytest.mark.reliability(category="filters", expect="clear error")
def test_number_filter_on_text_values(store: EmbeddedDocumentStore) -> None:
    """An ordering filter with a number on a field where a document stores text ("2010")"""
    filters = {"field": "meta.year", "operator": ">", "value": 2000}
    with pytest.raises(FilterError, match=r"holds a text value in 'meta.year'"):
        store.filter_documents(filters)
    with pytest.raises(FilterError):  # Haystack's in-memory filtering refuses it too
        [d for d in DOCUMENTS if document_matches_filter(filters, d)]
    # Where no document holds text, the same comparison is fine.
    assert _ids(
        store, {"operator": "AND", "conditions": [{"field": "meta.lang", "operator": "==", "value": "de"}, filters]}
    ) == {"b"}


@pytest.mark.reliability(category="filters", expect="clear error")
def test_number_against_string_through_the_command_line(indexed_store: Path) -> None:
    """A BM25 search with an ordering filter comparing a number field with a word"""
    filters = json.dumps({"field": "meta.passage_index", "operator": ">", "value": "two"})
    result = cli(
        "run", PIPELINES / "bm25.yml", "--store", indexed_store, "-q", "mountain", "--input", f"bm25.filters={filters}"
    )
    assert_clear_error(result, "meta.passage_index", "ISO formatted dates")


@pytest.mark.timeout(30)
@pytest.mark.reliability(category="filters", expect="clear error")
def test_deeply_nested_filter(store: EmbeddedDocumentStore) -> None:
    """A filter nested 500 levels deep"""
    filters: dict[str, Any] = ONLY_A
    for _ in range(500):
        filters = {"operator": "NOT", "conditions": [filters]}
    with pytest.raises(FilterError, match="nested more than"):
        store.filter_documents(filters)


@pytest.mark.timeout(30)
@pytest.mark.reliability(category="filters", expect="correct result")
def test_huge_filters(store: EmbeddedDocumentStore) -> None:
    """An 'in' filter with 100,000 ids and an OR of 5,000 conditions"""
    ids = [f"missing{i}" for i in range(100_000)] + ["b"]
    assert _ids(store, {"field": "id", "operator": "in", "value": ids}) == {"b"}
    assert _ids(store, {"field": "id", "operator": "not in", "value": ids}) == {"a", "c"}
    many = [{"field": "id", "operator": "==", "value": i} for i in ids[:5000]] + [
        {"field": "id", "operator": "==", "value": "c"}
    ]
    assert _ids(store, {"operator": "OR", "conditions": many}) == {"c"}


@pytest.mark.parametrize(
    "filters",
    [
        {"field": "meta.year", "operator": "in", "value": [2001, "2010", None]},
        {"field": "meta.missing", "operator": "not in", "value": ["x"]},
        {"field": "meta.topic.name", "operator": "==", "value": None},
        {"operator": "NOT", "conditions": [{"field": "meta.lang", "operator": "==", "value": "en"}]},
        {"field": "year", "operator": "==", "value": 2005},
    ],
    ids=["in with null", "not in on a missing field", "nested field equals null", "NOT", "legacy bare field"],
)
@pytest.mark.reliability(category="filters", expect="correct result")
def test_filters_agree_with_haystack(store: EmbeddedDocumentStore, filters: dict[str, Any]) -> None:
    """A valid filter gives what Haystack's in-memory filtering gives"""
    assert _ids(store, filters) == {d.id for d in DOCUMENTS if document_matches_filter(filters, d)}
