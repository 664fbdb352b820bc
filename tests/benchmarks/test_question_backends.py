"""The question back-end benchmark: its break-even arithmetic and a run on a tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.encoding import question_backends
from benchmarks.encoding.question_backends import break_even

pytest.importorskip("openvino")
pytestmark = pytest.mark.usefixtures("one_thread")


def test_break_even_is_start_up_difference_over_saving_per_question() -> None:
    start_up = {"torch": 0.5, "openvino": 4.5}
    assert break_even(start_up, {"torch": 5.0, "openvino": 3.0}) == pytest.approx(2000)


def test_a_slower_start_that_is_not_faster_later_never_breaks_even() -> None:
    assert break_even({"torch": 0.5, "openvino": 4.5}, {"torch": 3.0, "openvino": 3.0}) is None


@pytest.mark.integration
def test_run_on_a_tiny_model_writes_both_back_ends(tiny_bert_dir: Path, tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    lines = [{"question": f"question number {n}?", "answers": ["x"]} for n in range(3)]
    questions.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / "report"
    argv = ["--model", str(tiny_bert_dir), "--questions", str(questions), "--repeats", "1", "--out", str(out)]
    assert question_backends.main(argv) == 0
    summary = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert set(summary["start_up_s"]) == {"torch", "openvino"} and summary["questions"] == 3
    assert all(len(times) == 1 and times[0] > 0 for times in summary["start_up_s"].values())
    markdown = out.with_suffix(".md").read_text(encoding="utf-8")
    assert "| openvino |" in markdown and "python -m benchmarks.encoding.question_backends" in markdown
