"""What a reader export records of how it was made (dpr_components/reader_training/model_record.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpr_components.reader_training.model_record import earlier_record, record_provenance


def _reader_folder(path: Path, info: object) -> Path:
    path.mkdir(parents=True)
    (path / "reader_info.json").write_text(json.dumps(info))
    return path


def test_export_records_command_data_cost_and_the_reader_it_went_on_from(tmp_path: Path) -> None:
    earlier = _reader_folder(tmp_path / "earlier", {"training": {"seed": 0}, "step": 4000, "command": "stage one"})
    export = _reader_folder(tmp_path / "run" / "export", {"training": {"seed": 2}, "step": 10})
    log = [
        {"step": s, "passages_per_s": 10.0 + s, "questions_per_s": 5.0, "steps_per_s": 1.0, "peak_rss_mb": 2048.0}
        for s in (10, 20, 30)
    ]
    (tmp_path / "run" / "log.jsonl").write_text("\n".join(json.dumps(e) for e in log) + "\n")
    record_provenance(
        export, tmp_path / "run", "python -m training.reader.train_reader ...", {"nq/train.jsonl": 5}, str(earlier)
    )
    info = json.loads((export / "reader_info.json").read_text())
    assert info["command"] == "python -m training.reader.train_reader ..." and info["data"] == {"nq/train.jsonl": 5}
    assert info["cost"] == {
        "passages_per_s": 30.0,
        "questions_per_s": 5.0,
        "hours": pytest.approx(30 / 3600),
        "peak_gb": 2.0,
    }
    assert info["continues"]["command"] == "stage one" and info["step"] == 10


def test_a_start_without_a_record_has_no_earlier_stage(tmp_path: Path) -> None:
    assert earlier_record("bundled:all-MiniLM-L6-v2") is None
    assert earlier_record(str(tmp_path)) is None


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[1, 2]",
        '{"training": "fast", "step": 1}',
        "\udcff",
        '{"training": {}, "step": 1, "continues": {"training": {}}}',
    ],
)
def test_a_damaged_record_of_the_starting_reader_is_a_clear_error(tmp_path: Path, content: str) -> None:
    (tmp_path / "reader_info.json").write_bytes(content.encode("utf-8", "surrogateescape"))
    with pytest.raises(SystemExit, match=r"reader_info.json: not a"):
        earlier_record(str(tmp_path))
