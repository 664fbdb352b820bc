"""Command-line mistakes: --set, --input, --inputs-file, --store, --batch, queries and filters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.reliability.harness import PIPELINES, assert_clear_error, assert_success, cli

COMMAND_LINE = pytest.mark.reliability(category="command line", expect="clear error")
QUERIES = pytest.mark.reliability(category="queries", expect="clear error")
BATCH = pytest.mark.reliability(category="batch files", expect="clear error")
FILTERS = pytest.mark.reliability(category="filters (CLI)", expect="clear error")


def _search(store: Path, model: Path, *args: str) -> list[object]:
    return ["run", PIPELINES / "search.yml", "--store", store, "--set", f"hybrid.model={model}", *args]


def _bm25(store: Path, *args: str) -> list[object]:
    return ["run", PIPELINES / "bm25.yml", "--store", store, *args]


@COMMAND_LINE
@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_weight(indexed_store: Path, tiny_st_dir: Path, value: str) -> None:
    """A hybrid weight of NaN or Infinity with --set (Python's JSON reader accepts them)"""
    result = cli(*_search(indexed_store, tiny_st_dir, "--set", f"hybrid.weight={value}", "-q", "hamlet", "--json"))
    assert_clear_error(result, "--set hybrid.weight", "not a finite number")
    assert result.out == ""


@COMMAND_LINE
def test_set_wrong_type(indexed_store: Path) -> None:
    """--set bm25.top_k=abc"""
    assert_clear_error(
        cli(*_bm25(indexed_store, "--set", "bm25.top_k=abc", "-q", "x")), "bm25.top_k: expected an integer, got 'abc'"
    )


@COMMAND_LINE
def test_set_nested_store_parameter_wrong_type(indexed_store: Path) -> None:
    """--set on a parameter of the store inside a retriever, with text for a number"""
    result = cli(*_bm25(indexed_store, "--set", "bm25.document_store.bm25_k1=high", "-q", "x"))
    assert_clear_error(result, "--set bm25.document_store.bm25_k1: expected a finite number, got 'high'")


@COMMAND_LINE
def test_set_value_outside_choices(indexed_store: Path, tiny_st_dir: Path) -> None:
    """--set hybrid.precision to a precision that does not exist"""
    result = cli(*_search(indexed_store, tiny_st_dir, "--set", "hybrid.precision=fancy", "-q", "x"))
    assert_clear_error(result, "hybrid.precision: expected one of 'auto', 'fp32', 'bf16', got 'fancy'")


@COMMAND_LINE
def test_set_misspelt_parameter(indexed_store: Path) -> None:
    """--set bm25.topk=3 (a misspelt parameter name)"""
    assert_clear_error(
        cli(*_bm25(indexed_store, "--set", "bm25.topk=3", "-q", "x")), "BM25Retriever has no parameter 'topk'"
    )


@COMMAND_LINE
def test_input_non_finite(indexed_store: Path, tiny_st_dir: Path) -> None:
    """--input weight=NaN"""
    result = cli(*_search(indexed_store, tiny_st_dir, "--input", "weight=NaN", "-q", "x"))
    assert_clear_error(result, "--input weight", "not a finite number")


@COMMAND_LINE
def test_input_wrong_type(indexed_store: Path) -> None:
    """--input bm25.top_k with a quoted string instead of a number"""
    assert_clear_error(
        cli(*_bm25(indexed_store, "--input", 'bm25.top_k="3"', "-q", "x")), "bm25.top_k: expected an integer"
    )


@COMMAND_LINE
def test_inputs_file_wrong_types(indexed_store: Path, tmp_path: Path) -> None:
    """--inputs-file whose query is a number"""
    inputs = tmp_path / "inputs.json"
    inputs.write_text('{"query": 42}', encoding="utf-8")
    assert_clear_error(cli(*_bm25(indexed_store, "--inputs-file", inputs)), "the query must be text, got int 42")


@COMMAND_LINE
def test_inputs_file_invalid_json(indexed_store: Path, tmp_path: Path) -> None:
    """--inputs-file that is not valid JSON"""
    inputs = tmp_path / "inputs.json"
    inputs.write_text('{\n  "query": "x",\n}\n', encoding="utf-8")
    assert_clear_error(cli(*_bm25(indexed_store, "--inputs-file", inputs)), f"{inputs}:3: invalid JSON")


@COMMAND_LINE
def test_inputs_file_is_a_directory(indexed_store: Path, tmp_path: Path) -> None:
    """--inputs-file naming a directory"""
    assert_clear_error(cli(*_bm25(indexed_store, "--inputs-file", tmp_path)), "is a directory")


@COMMAND_LINE
def test_mistyped_store_folder(indexed_store: Path) -> None:
    """A search with a mistyped --store folder (it used to create a new, empty store)"""
    typo = indexed_store.parent / "stroe"
    assert_clear_error(cli(*_bm25(typo, "-q", "hamlet")), f"store folder {typo} does not exist", "index into it first")
    assert not typo.exists()


@COMMAND_LINE
def test_store_folder_without_store(indexed_store: Path, tmp_path: Path) -> None:
    """--store naming an existing folder that holds no store"""
    folder = tmp_path / "empty"
    folder.mkdir()
    assert_clear_error(cli(*_bm25(folder, "-q", "hamlet")), "holds no document store (no documents.sqlite)")


# --- queries ------------------------------------------------------------------------------------


@QUERIES
@pytest.mark.parametrize(
    "query", ["\u200b\u200c\ufeff", "\u2060\u00ad\u200d", "\x1b\x07\x00 \t"], ids=["zero-width", "format", "control"]
)
def test_invisible_query(indexed_store: Path, query: str) -> None:
    """A query made only of invisible characters (zero-width spaces, BOM, controls)"""
    assert_clear_error(cli(*_bm25(indexed_store, "-q", query)), "the query is empty", "no visible character")


@QUERIES
def test_query_too_long(indexed_store: Path) -> None:
    """A query of 5,000 characters"""
    assert_clear_error(
        cli(*_bm25(indexed_store, "-q", "hamlet " * 715)), "the query has 5,005 characters; the limit is 2,000"
    )


@QUERIES
def test_invisible_query_to_dense_retriever(indexed_store: Path, tiny_st_dir: Path) -> None:
    """An invisible query to the hybrid pipeline (question encoder, BM25 and ranker)"""
    assert_clear_error(cli(*_search(indexed_store, tiny_st_dir, "-q", "\ufeff\u200b")), "the query is empty")


# --- batch files --------------------------------------------------------------------------------


def _batch(tmp_path: Path, second_line: str) -> Path:
    path = tmp_path / "queries.jsonl"
    path.write_text(f"who wrote hamlet\n{second_line}\nhoney bees\n", encoding="utf-8")
    return path


@BATCH
@pytest.mark.parametrize(
    "line, message",
    [
        ('{"query": "x",}', "invalid JSON"),
        ('["who", "wrote"]', "expected query text or a JSON object of inputs, got a JSON list"),
        ('{"query": "   "}', "the query is empty"),
        ('{"query": "x", "top_k": "abc"}', "top_k must be a positive integer, got 'abc'"),
        ('{"query": "x", "top_k": NaN}', "NaN is not a finite number"),
        ('{"nonsense": 1}', "no input named 'nonsense'"),
    ],
    ids=["invalid-json", "json-list", "empty-query", "top_k-type", "nan", "unknown-input"],
)
def test_bad_batch_line(indexed_store: Path, tmp_path: Path, line: str, message: str) -> None:
    """A bad second line in a --batch file"""
    path = _batch(tmp_path, line)
    result = cli(*_bm25(indexed_store, "--batch", path, "--json"))
    assert_clear_error(result, f"{path}:2: ", message)
    assert [json.loads(out)["line"] for out in result.out.splitlines()] == [1]  # the line before was answered


@BATCH
def test_batch_file_not_utf8(indexed_store: Path, tmp_path: Path) -> None:
    """A --batch file with a Latin-1 line"""
    path = tmp_path / "queries.txt"
    path.write_bytes("hamlet\ncaf\xe9\n".encode("latin-1"))
    assert_clear_error(cli(*_bm25(indexed_store, "--batch", path, "--json")), f"{path}:2: not valid UTF-8")


@BATCH
def test_batch_file_missing(indexed_store: Path, tmp_path: Path) -> None:
    """A --batch file that does not exist"""
    assert_clear_error(cli(*_bm25(indexed_store, "--batch", tmp_path / "nope.txt")), "does not exist")


# --- filters ------------------------------------------------------------------------------------


@FILTERS
@pytest.mark.parametrize(
    "filters, message",
    [
        ({"field": "meta.title", "operator": "~~", "value": "x"}, "unknown filter operator '~~'"),
        ({"field": "meta.ti'tle", "operator": "==", "value": "x"}, "invalid filter field"),
        ({"field": "meta.title", "operator": ">", "value": 5}, "cannot be compared"),
        ({"operator": "AND"}, "conditions"),
        ("meta.title == 'Hamlet'", "filters: expected a mapping"),
    ],
    ids=["operator", "quote-in-field", "number-vs-text", "no-conditions", "not-a-mapping"],
)
def test_bad_filter(indexed_store: Path, filters: object, message: str) -> None:
    """A bad --input bm25.filters value"""
    value = json.dumps(filters)
    assert_clear_error(cli(*_bm25(indexed_store, "-q", "hamlet", "--input", f"bm25.filters={value}")), message)


@pytest.mark.reliability(category="filters (CLI)", expect="correct result")
def test_good_filter(indexed_store: Path) -> None:
    """A valid filter on the title"""
    value = json.dumps({"field": "meta.title", "operator": "==", "value": "Mount Everest"})
    result = cli(*_bm25(indexed_store, "-q", "highest mountain", "--input", f"bm25.filters={value}", "--json"))
    assert_success(result)
    documents = json.loads(result.out)["bm25"]["documents"]
    assert documents and {d["meta"]["title"] for d in documents} == {"Mount Everest"}
