"""Served training jobs choose, or are given, a run folder of their own inside the trainer's output folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from haystack import Pipeline

from dpr_components.serving.jobs import OUTPUT_KEY, TrainWrapper
from haystack_integrations.components.trainers.dpr.dpr_trainer import DPRTrainer


class _Jobs:
    """Records what would be queued."""

    def __init__(self) -> None:
        self.submitted: list[dict[str, Any]] = []

    def submit(self, name: str, wrapper: TrainWrapper, inputs: dict[str, Any], job_id: str | None = None) -> Any:
        self.submitted.append(inputs)
        return job_id


@pytest.fixture()
def wrapper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TrainWrapper:
    monkeypatch.setenv("DPR_INPUT_ROOT", str(tmp_path))
    pipeline = Pipeline()
    pipeline.add_component("trainer", DPRTrainer(output_dir=str(tmp_path / "runs")))
    spec = {"inputs": {"data": "trainer.data"}, "outputs": {"checkpoint": "trainer.checkpoint"}}
    (tmp_path / "train.jsonl").write_text(json.dumps({"question": "q"}) + "\n", encoding="utf-8")
    return TrainWrapper(pipeline, spec, "train_dpr", _Jobs())  # type: ignore[arg-type]


def test_each_job_gets_a_new_folder(wrapper: TrainWrapper, tmp_path: Path) -> None:
    first = wrapper.run_api(str(tmp_path / "train.jsonl"))
    second = wrapper.run_api(str(tmp_path / "train.jsonl"))
    folders = [inputs[OUTPUT_KEY] for inputs in wrapper.jobs.submitted]  # type: ignore[attr-defined]
    assert folders == [str(tmp_path / "runs" / f"job-{first}"), str(tmp_path / "runs" / f"job-{second}")]


def test_a_job_names_its_folder(wrapper: TrainWrapper, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wrapper.run_api(str(tmp_path / "train.jsonl"), output="nq/small")
    inputs = wrapper.jobs.submitted[0]  # type: ignore[attr-defined]
    assert inputs[OUTPUT_KEY] == str(tmp_path / "runs" / "nq" / "small")
    seen: dict[str, Any] = {}

    def run_declared(values: dict[str, Any], per_component: dict[str, dict[str, Any]]) -> dict[str, Any]:
        seen.update(values=values, per_component=per_component)
        return {"outputs": {"checkpoint": "x"}}

    monkeypatch.setattr(wrapper, "run_declared", run_declared)
    assert wrapper.run_job(inputs) == {"checkpoint": "x"}
    assert OUTPUT_KEY not in seen["values"]
    assert seen["per_component"] == {"trainer": {"output_dir": str(tmp_path / "runs" / "nq" / "small")}}


@pytest.mark.parametrize("output", ["../elsewhere", "/tmp/abs", "a/../../b", "."])
def test_a_folder_outside_the_output_folder_is_refused(wrapper: TrainWrapper, tmp_path: Path, output: str) -> None:
    with pytest.raises(ValueError, match="give a folder name inside the trainer's output folder"):
        wrapper.run_api(str(tmp_path / "train.jsonl"), output=output)


def test_a_folder_holding_something_else_is_refused(wrapper: TrainWrapper, tmp_path: Path) -> None:
    store = tmp_path / "runs" / "store"
    store.mkdir(parents=True)
    (store / "documents.sqlite").write_bytes(b"")
    with pytest.raises(ValueError, match="holds a document store; give the job another 'output'"):
        wrapper.run_api(str(tmp_path / "train.jsonl"), output="store")
