"""Fixtures of the reliability suite; see harness.py for what each case checks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers.commands import index_args
from tests.helpers.corpora import SMALL_CORPUS, write_jsonl, write_training_data
from tests.reliability.harness import EXPECTATIONS


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "reliability(category, expect): a case of the reliability suite")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        marker = item.get_closest_marker("reliability")
        if marker is None:
            continue
        expect = marker.kwargs.get("expect")
        if expect not in EXPECTATIONS or not marker.kwargs.get("category"):
            raise pytest.UsageError(
                f"{item.nodeid}: reliability marker needs category= and expect= one of {EXPECTATIONS}"
            )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    outcome = yield
    report = outcome.get_result()
    target = os.environ.get("RELIABILITY_RESULTS")
    marker = item.get_closest_marker("reliability")
    # One line per case: its call, or its setup when that failed or skipped.
    if (
        not target
        or marker is None
        or not (report.when == "call" or (report.when == "setup" and report.outcome != "passed"))
    ):
        return
    doc = (getattr(item, "function", None).__doc__ or item.name).strip().splitlines()[0]
    params = getattr(item, "callspec", None)
    case = {
        "id": item.nodeid,
        "category": marker.kwargs["category"],
        "expect": marker.kwargs["expect"],
        "case": doc,
        "params": params.id if params else None,
        "outcome": report.outcome,
        "seconds": round(report.duration, 2),
        "details": dict(item.user_properties),
    }
    with open(target, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(case) + "\n")


@pytest.fixture(scope="session")
def _built_store(tmp_path_factory: pytest.TempPathFactory, tiny_st_dir: Path) -> Path:
    from tests.reliability.harness import assert_success, cli

    folder = tmp_path_factory.mktemp("reliability_store")
    corpus = write_jsonl(folder / "corpus.jsonl", SMALL_CORPUS)
    assert_success(cli(*index_args(corpus, folder / "store", tiny_st_dir)))
    return folder / "store"


@pytest.fixture(scope="session")
def finished_dpr_run(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: Path) -> tuple[Path, Path]:
    """A finished, uninterrupted 6-step DPR run (``training_checks.train_args``) and its data; copy it to change it."""
    from tests.reliability.harness import assert_success
    from tests.reliability.training_checks import train_args, train_command

    folder = tmp_path_factory.mktemp("dpr_run")
    data = write_training_data(folder / "train.jsonl")
    assert_success(train_command(train_args(data, folder / "run", tiny_bert_dir)))
    return folder / "run", data


@pytest.fixture()
def indexed_store(_built_store: Path, tmp_path: Path) -> Path:
    """A private copy of a small store (SMALL_CORPUS, 6 passages) indexed with ``tiny_st_dir``."""
    import shutil

    return Path(shutil.copytree(_built_store, tmp_path / "store"))
