"""training.retriever.compare: paired comparisons of training.retriever.evaluate outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.retriever.compare import hits_at, main


def _evaluation(path: Path, ranks: list[int | None]) -> Path:
    path.write_text(json.dumps({"datasets": {"q.jsonl": {"match": "gold passage", "first_hit_ranks": ranks}}}))
    return path


def test_hits_at_k() -> None:
    assert hits_at([1, 3, None, 2], 2) == [1.0, 0.0, 0.0, 1.0]


def test_a_clear_gain_is_supported_and_a_tie_is_not(tmp_path: Path) -> None:
    reference = _evaluation(tmp_path / "a.json", [None] * 60 + [1] * 40)
    better = _evaluation(tmp_path / "b.json", [1] * 100)
    same = _evaluation(tmp_path / "c.json", [None] * 60 + [1] * 40)
    out = tmp_path / "compare.md"
    argv = [str(reference), str(better), str(same), "--names", "ref,better,same", "--ks", "1", "--out", str(out)]
    assert main([*argv, "--title", "T"]) == 0
    text = out.read_text()
    assert text.startswith("# T\n\nProduced by: `python -m training.retriever.compare ")
    assert "## q.jsonl (100 questions, gold passage hits)" in text
    # Every question a hit: the Wilson interval of 100 of 100, not the bootstrap's zero-width one.
    assert "| ref | 40.0 [" in text and "| better | 100.0 [96.3, 100.0] (Wilson) |" in text
    assert "| better − ref | +60.0 [" in text and "] gain, p=" in text
    assert "| same − ref | +0.0 [+0.0, +0.0] —, p=1 |" in text


def test_files_that_do_not_pair_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _evaluation(tmp_path / "a.json", [1, 2])
    b = _evaluation(tmp_path / "b.json", [1])
    assert main([str(a), str(b)]) == 2
    assert "the files hold different numbers of questions: [2, 1]" in capsys.readouterr().err
