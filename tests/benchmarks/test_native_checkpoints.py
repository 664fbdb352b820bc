"""benchmarks/peers/native_checkpoints.py: a stopped run of haystack_native.py goes on where it stopped —
finished phases read back, a phase in progress resumed at its last saved question, checkpoints of other
settings refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from haystack.dataclasses import ExtractedAnswer

from benchmarks.peers import native_checkpoints
from benchmarks.peers.haystack_native import measure_end_to_end
from benchmarks.peers.native_checkpoints import Checkpoints

SETTINGS = {"limit": 2, "store": "indexes/pool"}


def test_a_finished_phase_is_read_back_not_measured_again(tmp_path: Path) -> None:
    first = Checkpoints(tmp_path, SETTINGS)
    assert first.phase("indexing", lambda: {"seconds": 1.5}) == {"seconds": 1.5}

    def measure_again() -> None:
        raise AssertionError("a finished phase was measured again")

    assert Checkpoints(tmp_path, dict(SETTINGS)).phase("indexing", measure_again) == {"seconds": 1.5}


def test_a_checkpoint_of_other_settings_is_refused(tmp_path: Path) -> None:
    Checkpoints(tmp_path, SETTINGS).phase("indexing", lambda: {"seconds": 1.5})
    with pytest.raises(SystemExit, match=r"indexing\.json was written with other settings.*new --work folder"):
        Checkpoints(tmp_path, {**SETTINGS, "limit": 3}).phase("indexing", dict)


def _asker(calls: list[str], stop_at: str | None = None) -> Any:
    def ask(question: str) -> list[ExtractedAnswer]:
        if question == stop_at:
            raise KeyboardInterrupt  # the run stopped here
        calls.append(question)
        return [ExtractedAnswer(query=question, score=0.9, data="Paris")]

    return ask


def test_a_stopped_phase_goes_on_from_its_last_saved_question(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_checkpoints, "SAVE_EVERY", 1)
    asked = [("q.jsonl", f"question {n}", ["Paris"]) for n in range(4)]
    checkpoints, calls = Checkpoints(tmp_path, SETTINGS), []
    with pytest.raises(KeyboardInterrupt):
        measure_end_to_end({"qa": _asker(calls, stop_at="question 2")}, asked, 0, checkpoints, len(asked))
    assert calls == ["question 0", "question 1"]
    resumed: list[str] = []
    result = checkpoints.phase(
        "end_to_end", lambda: measure_end_to_end({"qa": _asker(resumed)}, asked, 0, checkpoints, len(asked))
    )
    assert resumed[:2] == ["question 2", "question 3"]  # the first pass went on at the third question
    assert resumed[2:] == [q for _, q, _ in asked]  # then the second thread count from the start
    run = result["runs"]["qa"]
    assert run["em"]["on"] == [1.0] * 4 and all(len(seconds) == 4 for seconds in run["seconds"].values())
    assert not (tmp_path / "phases" / "end_to_end.partial.json").exists()
