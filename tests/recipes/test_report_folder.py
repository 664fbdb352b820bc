"""The choosing scripts' report folder: measure or re-read, the measuring command kept, both files written."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from training.common.report_folder import add_report_options, measured_summary, write_report_folder


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_report_options(parser)
    return parser.parse_args(list(argv))


def test_measure_then_re_render_keeps_the_measuring_command(tmp_path: Path, capsys) -> None:
    out = str(tmp_path / "report")
    measured = measured_summary(_args("--out", out), "training.x", ["--out", out], lambda: {"value": 1})
    assert measured == {"value": 1, "command": f"python -m training.x --out {out}"}
    write_report_folder(out, measured, "# report\n")
    assert (tmp_path / "report" / "report.md").read_text() == "# report\n"
    assert "# report" in capsys.readouterr().out

    def never() -> dict:
        raise AssertionError("--from-json must not measure")

    again = measured_summary(_args("--out", out, "--from-json"), "training.x", ["--from-json"], never)
    assert again == measured  # the stored command, not the re-rendering one


def test_a_stored_summary_without_a_command_gets_the_running_one(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text(json.dumps({"value": 2}))
    args = _args("--out", str(tmp_path), "--from-json")
    summary = measured_summary(args, "training.x", ["--from-json"], dict)
    assert summary == {"value": 2, "command": "python -m training.x --from-json"}
