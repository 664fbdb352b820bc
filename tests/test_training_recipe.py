"""The NQ recipe's command line: run names, plans and refused combinations (no training)."""

from __future__ import annotations

import pytest

from training.train_dpr_nq import NQ_QUESTIONS, main


def test_dry_run_names_the_multi_run_and_its_questions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--dry-run", "--with-squad", "2500", "--multi"]) == 0
    plan = capsys.readouterr().out
    assert plan.startswith("multi-nqall-squad2500-bs32-hn1-")
    assert f": {NQ_QUESTIONS + 2500} questions" in plan


def test_dry_run_of_the_continuation_counts_replayed_nq_questions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--dry-run", "--with-squad", "2500"]) == 0
    assert capsys.readouterr().out.startswith("squad2500-nq2500-from-nqall-")


@pytest.mark.parametrize("argv", [["--multi"], ["--multi", "--with-squad", "100", "--subset", "1000"]])
def test_multi_needs_squad_questions_and_no_subset(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--dry-run", *argv])
    assert exit_info.value.code == 2
    assert "--multi needs --with-squad N and no --subset" in capsys.readouterr().err
