"""The optional modules of the package's extras: found or not, imported with a one-line hint, and the pipeline
types that need one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dpr_components.utils.extras import (
    DATASETS,
    ELASTICSEARCH,
    PLOTS,
    Extra,
    MissingExtraError,
    check_pipeline_extras,
    import_extra,
    is_installed,
)
from tests.helpers.missing_modules import hide_modules

ES_STORE = f"{ELASTICSEARCH.module}.document_store.ElasticsearchDocumentStore"
NOWHERE = Extra("dpr_components_no_such_module", "no-such-distribution", "nothing")


def test_an_installed_extra_imports_and_a_missing_one_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    assert is_installed(PLOTS) and import_extra(PLOTS, "a plot").__name__ == "matplotlib"
    hide_modules(monkeypatch, "matplotlib")
    assert not is_installed(PLOTS)
    with pytest.raises(MissingExtraError) as raised:
        import_extra(PLOTS, "a plot")
    assert str(raised.value) == "a plot needs matplotlib: pip install 'dpr-components[plots]'"
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, ImportError)  # one line on the CLI
    assert raised.value.__suppress_context__ and raised.value.__cause__ is None  # no chained traceback


def test_a_module_the_extra_needs_missing_is_named_too(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``datasets`` installed without pyarrow: the hint names the module that is missing."""
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "__init__.py").write_text("import pyarrow\n", encoding="utf-8")
    hide_modules(monkeypatch, "datasets", "pyarrow")
    monkeypatch.delitem(sys.modules, "datasets")  # found again, on the path below
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingExtraError) as raised:
        import_extra(DATASETS, "questions from parquet")
    assert raised.value.name == "pyarrow" and "pip install 'dpr-components[datasets]'" in str(raised.value)


def test_an_unknown_module_is_not_installed() -> None:
    assert not is_installed(NOWHERE)
    with pytest.raises(
        MissingExtraError, match=r"^x needs no-such-distribution: pip install 'dpr-components\[nothing\]'$"
    ):
        import_extra(NOWHERE, "x")


def test_pipeline_types_of_a_missing_extra_are_named_with_their_component(monkeypatch: pytest.MonkeyPatch) -> None:
    components = {
        "reader": {
            "type": "haystack_integrations.components.readers.dpr.span_reader.SpanReader",
            "init_parameters": {},
        },
        "bm25": {
            "type": "haystack_integrations.components.retrievers.dpr.bm25_retriever.BM25Retriever",
            "init_parameters": {"document_store": {"type": ES_STORE, "init_parameters": {"hosts": "http://x"}}},
        },
    }
    check_pipeline_extras(components, "p.yml")  # installed: nothing to say
    hide_modules(monkeypatch, ELASTICSEARCH.module)
    with pytest.raises(MissingExtraError) as raised:
        check_pipeline_extras(components, "p.yml")
    assert str(raised.value) == (
        "p.yml: bm25.document_store (ElasticsearchDocumentStore) needs elasticsearch-haystack: "
        "pip install 'dpr-components[elasticsearch]'"
    )
    check_pipeline_extras({"reader": components["reader"]}, "p.yml")  # a pipeline without such a type
