"""The one rule for naming a data source, shared by evaluation questions and training data."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpr_components.dpr_data.loading import load_training_examples
from dpr_components.evaluation.questions import load_questions
from dpr_components.utils.sources import (
    ResolvedSource,
    resolve_data_source,
    resolve_source,
)


def test_hf_prefix_folders_and_parquet_files_go_to_datasets(tmp_path: Path) -> None:
    (tmp_path / "qs.parquet").write_bytes(b"")
    assert resolve_source("hf:nq_open", "file") == ResolvedSource("nq_open", with_datasets=True)
    assert resolve_source(tmp_path, "file") == ResolvedSource(str(tmp_path), with_datasets=True)
    parquet = str(tmp_path / "qs.parquet")
    assert resolve_source(parquet, "file") == ResolvedSource(parquet, with_datasets=True)


def test_other_existing_files_are_read_by_the_caller(tmp_path: Path) -> None:
    source = tmp_path / "qs.jsonl"
    source.write_text("{}\n", encoding="utf-8")
    assert resolve_source(source, "file") == ResolvedSource(str(source), with_datasets=False)


def test_hub_ids_go_to_datasets() -> None:
    assert resolve_source("nq_open", "file") == ResolvedSource("nq_open", with_datasets=True)
    assert resolve_source("org/name", "file") == ResolvedSource("org/name", with_datasets=True)


@pytest.mark.parametrize("name", ["missing.jsonl", "missing.parquet", "no such name", "../up/name"])
def test_missing_files_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"^question file .* does not exist$"):
        resolve_source(name, "question file")


def test_file_suffixes_decide_which_missing_names_are_files() -> None:
    # Any suffix names a file by default; with `file_suffixes`, only those do and the rest may be hub ids.
    with pytest.raises(FileNotFoundError):
        resolve_source("org/name.v1", "file")
    assert resolve_source("org/name.v1", "file", file_suffixes={".jsonl"}).with_datasets


def test_questions_and_training_data_share_the_rule(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"question file .* does not exist"):
        load_questions(tmp_path / "missing.jsonl")
    with pytest.raises(FileNotFoundError, match=r"training data file .* does not exist"):
        load_training_examples(tmp_path / "missing.jsonl")


def test_relative_names_fall_back_to_the_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data" / "nq").mkdir(parents=True)
    (tmp_path / "data" / "nq" / "dev.jsonl").write_text("{}\n", encoding="utf-8")
    monkeypatch.setenv("DPR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    assert resolve_data_source("nq/dev.jsonl") == str(tmp_path / "data" / "nq" / "dev.jsonl")
    assert resolve_data_source("nq/other.jsonl") == "nq/other.jsonl"
    assert resolve_data_source("hf:nq_open") == "hf:nq_open"
