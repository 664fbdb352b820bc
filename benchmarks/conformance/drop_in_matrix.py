"""The drop-in matrix of docs/haystack_conformance.md: junit outcomes of tests/document_stores/test_drop_in.py
as one cell per (component, store), labelled by the test module's ROWS, COLUMNS and REFUSED."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from dpr_components.evaluation.tables import markdown_table
from tests.document_stores.test_drop_in import COLUMNS, NO_SERVER, REFUSED, ROWS

TEST_FILE = "tests/document_stores/test_drop_in.py"
WORKS = "works"
REFUSED_CELL = "refused (clear error)"
NO_SERVER_CELL = "skipped: no server"
FAILED = "FAILED"
NOT_RUN = "not run"


def _split_name(name: str) -> tuple[str, str, str]:
    """(test function, row key, column) of a junit test name such as
    ``test_haystack_document_writer[EmbeddedDocumentStore-SKIP]``."""
    function, _, params = name.partition("[")
    parts = params.rstrip("]").split("-") if params else []
    column = next((p for p in parts if p in COLUMNS), "")
    rest = [p for p in parts if p != column]
    return function, f"{function}[{'-'.join(rest)}]" if rest else function, column


def _cell(case: ET.Element, function: str, column: str) -> tuple[str, str]:
    """The cell text and, for a failure, its first message line."""
    problem = case.find("failure") if case.find("failure") is not None else case.find("error")
    if problem is not None:
        return FAILED, (problem.get("message") or "").splitlines()[0][:200] if problem.get("message") else ""
    skipped = case.find("skipped")
    if skipped is not None:
        message = skipped.get("message") or ""
        if skipped.get("type") == "pytest.xfail":
            return f"{FAILED} (known bug, xfail)", message[:200]
        return (NO_SERVER_CELL, "") if NO_SERVER in message else (f"skipped: {message[:80]}", "")
    reason = REFUSED.get((function, column))
    return (f"{REFUSED_CELL}: {reason}", "") if reason else (WORKS, "")


def matrix(cases: list[ET.Element]) -> tuple[dict[str, dict[str, str]], list[str]]:
    """row label -> column -> cell (rows in ROWS order), and the failures as ``row × column: message``."""
    table: dict[str, dict[str, str]] = {label: dict.fromkeys(COLUMNS, NOT_RUN) for label in ROWS.values()}
    failures = []
    for case in cases:
        function, key, column = _split_name(case.get("name", ""))
        label = ROWS.get(key, key)
        text, message = _cell(case, function, column)
        table.setdefault(label, dict.fromkeys(COLUMNS, NOT_RUN))[column or "?"] = text
        if text.startswith(FAILED):
            failures.append(f"{label} × {column}: {message}")
    return table, sorted(failures)


def render(table: dict[str, dict[str, str]], failures: list[str]) -> list[str]:
    lines = [
        "",
        "## Drop-in matrix",
        "",
        f"Made by the same command from `{TEST_FILE}` (also part of the normal test run): one test per cell,",
        "with tiny random models and a three-passage corpus. Every pipeline is built from YAML text or",
        "dumped and loaded again, so each cell also covers serialisation; the Haystack components that",
        "have `run_async` are run both ways. The first rows are our components on each store; the rows",
        'named "Haystack ..." are Haystack\'s own components that take a document store, on ours, with',
        "`InMemoryDocumentStore` as the reference. The Elasticsearch column runs only when `ELASTICSEARCH_URL`",
        "names a server (see `tests/document_stores/test_elasticsearch.py`). A refused cell is a test that asserts the clear error.",
        "",
        *markdown_table(
            ["Component", *(f"`{c}`" for c in COLUMNS)],
            [[label, *(cells.get(c, NOT_RUN) for c in COLUMNS)] for label, cells in table.items()],
        ),
    ]
    lines += [
        "",
        "The store's embedding retriever: our `DenseRetriever` (given the `query_embedding`) on ours, Haystack's",
        "`InMemoryEmbeddingRetriever` and `ElasticsearchEmbeddingRetriever` on the others. The Haystack retriever",
        "before SpanReader: `FilterRetriever` on ours (Haystack has no BM25 retriever for it),",
        "`InMemoryBM25Retriever` and `ElasticsearchBM25Retriever` on the others. DocumentWriter with policy",
        "NONE or FAIL: writing a duplicate raises `DuplicateDocumentError` (NONE is FAIL in all three stores).",
    ]
    if failures:
        lines += ["", "Failed cells:", ""] + [f"- {failure}" for failure in failures]
    return lines


def summary(table: dict[str, dict[str, str]], failures: list[str]) -> dict[str, Any]:
    return {"test_file": TEST_FILE, "columns": list(COLUMNS), "rows": table, "failed": failures}
