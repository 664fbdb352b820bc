"""What the commands print and write: hostile corpus text on a terminal, JSON lines, report folders, full disks."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from tests.helpers.commands import index_args
from tests.reliability.harness import (
    PIPELINES,
    assert_clear_error,
    assert_success,
    cli,
    cli_process,
)

OUTPUT = pytest.mark.reliability(category="output", expect="clear error")

HOSTILE_TEXT = (
    "Hamlet is a tragedy \x1b[2J\x1b[H by Shakespeare \x1b]8;;http://collector.invalid/\x07click\x1b]8;;\x07 "
    "\rforged line \u202eevil\u202c \x9b31m red \x1b]0;new window title\x07 end"
)
TERMINAL_CONTROLS = ["\x1b", "\x07", "\r", "\x9b", "\u202e", "\u202c"]


@pytest.fixture()
def hostile_store(tmp_path: Path, tiny_st_dir: Path) -> Path:
    """A store whose passage and title carry escape sequences, a carriage return and bidi overrides."""
    corpus = tmp_path / "corpus.jsonl"
    documents = [
        {"id": "hamlet", "title": "Ham\x1b[31mlet\u202e", "text": HOSTILE_TEXT},
        {"id": "everest", "title": "Mount Everest", "text": "Mount Everest is the highest mountain on Earth."},
    ]
    corpus.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    store = tmp_path / "store"
    assert_success(cli(*index_args(corpus, store, tiny_st_dir)))
    return store


@pytest.mark.reliability(category="output", expect="correct result")
def test_table_output_is_sanitised(hostile_store: Path) -> None:
    """A search whose passage holds terminal escape sequences, a carriage return and bidi overrides (table output)"""
    result = cli("run", PIPELINES / "bm25.yml", "--store", hostile_store, "-q", "hamlet tragedy")
    assert_success(result)
    for control in TERMINAL_CONTROLS:
        assert control not in result.out, f"{control!r} reached the terminal"
    assert "\\x1b[2J" in result.out and "\\u202e" in result.out  # shown, inert


@pytest.mark.reliability(category="output", expect="correct result")
def test_json_output_escapes_controls(hostile_store: Path) -> None:
    """The same search with --json: valid JSON, controls escaped, the text itself unchanged"""
    result = cli("run", PIPELINES / "bm25.yml", "--store", hostile_store, "-q", "hamlet tragedy", "--json")
    assert_success(result)
    for control in TERMINAL_CONTROLS:
        assert control not in result.out
    documents = json.loads(result.out)["bm25"]["documents"]
    assert documents[0]["content"] == " ".join(HOSTILE_TEXT.split())  # the splitter joins words with single spaces


@pytest.mark.reliability(category="output", expect="correct result")
def test_batch_table_header_is_sanitised(hostile_store: Path, tmp_path: Path) -> None:
    """A --batch file whose query line holds an escape sequence (table output)"""
    batch = tmp_path / "queries.jsonl"
    batch.write_text('{"query": "hamlet \\u001b[2J tragedy"}\n', encoding="utf-8")
    result = cli("run", PIPELINES / "bm25.yml", "--store", hostile_store, "--batch", batch)
    assert_success(result)
    assert "\x1b" not in result.out and "== hamlet \\x1b[2J tragedy" in result.out


def _questions(tmp_path: Path) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text('{"id": "1", "question": "who wrote hamlet", "answers": ["Shakespeare"]}\n', encoding="utf-8")
    return path


def _eval(store: Path, questions: Path, out: Path) -> list[object]:
    return ["eval", PIPELINES / "bm25.yml", "--questions", questions, "--store", store, "--top-k", "5", "--out", out]


def _fit(store: Path, questions: Path, model: Path, out: Path) -> list[object]:
    return [
        "fit-lambda",
        PIPELINES / "search.yml",
        "--questions",
        questions,
        "--store",
        store,
        "--set",
        f"hybrid.model={model}",
        "--out",
        out,
    ]


@OUTPUT
def test_eval_out_is_a_file(indexed_store: Path, tmp_path: Path) -> None:
    """haystack eval --out naming an existing file"""
    out = tmp_path / "report.md"
    out.write_text("keep me", encoding="utf-8")
    assert_clear_error(cli(*_eval(indexed_store, _questions(tmp_path), out)), f"--out {out} is a file")
    assert out.read_text(encoding="utf-8") == "keep me"


@OUTPUT
def test_fit_lambda_out_is_a_file(indexed_store: Path, tiny_st_dir: Path, tmp_path: Path) -> None:
    """haystack fit-lambda --out naming an existing file"""
    out = tmp_path / "lambda"
    out.write_text("keep me", encoding="utf-8")
    assert_clear_error(cli(*_fit(indexed_store, _questions(tmp_path), tiny_st_dir, out)), f"--out {out} is a file")


@OUTPUT
def test_out_cannot_be_created(indexed_store: Path, tmp_path: Path) -> None:
    """haystack eval --out inside a path whose parent is a file"""
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    result = cli(*_eval(indexed_store, _questions(tmp_path), blocker / "reports"))
    assert_clear_error(result, f"--out {blocker / 'reports'}: cannot create the folder")


@OUTPUT
def test_fit_lambda_bad_objective(indexed_store: Path, tiny_st_dir: Path, tmp_path: Path) -> None:
    """haystack fit-lambda --objective top1"""
    result = cli(*_fit(indexed_store, _questions(tmp_path), tiny_st_dir, tmp_path / "out"), "--objective", "top1")
    assert_clear_error(result, "--objective expects comma-separated positive integers")


def _disk_full(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


@OUTPUT
def test_disk_full_writing_eval_report(indexed_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills up while haystack eval writes its report"""
    from dpr_components.evaluation import report

    monkeypatch.setattr(report, "atomic_write_text", _disk_full)
    out = tmp_path / "reports"
    assert_clear_error(
        cli(*_eval(indexed_store, _questions(tmp_path), out)), f"disk full while writing {out / 'report.json'}"
    )


@OUTPUT
def test_disk_full_writing_lambda_report(
    indexed_store: Path, tiny_st_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills up while haystack fit-lambda writes its report"""
    from dpr_components.cli import fit_lambda

    monkeypatch.setattr(fit_lambda, "atomic_write_text", _disk_full)
    out = tmp_path / "lambda"
    assert_clear_error(
        cli(*_fit(indexed_store, _questions(tmp_path), tiny_st_dir, out)),
        f"disk full while writing {out / 'lambda.md'}",
    )


@pytest.mark.reliability(category="output", expect="nothing lost")
@pytest.mark.integration
def test_eval_killed_while_writing_report(
    indexed_store: Path, tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    """haystack eval killed (kill -9) between two files of its report, over an earlier report"""
    questions, out = _questions(tmp_path), tmp_path / "reports"
    assert_success(cli(*_eval(indexed_store, questions, out)))
    before = {name: (out / name).read_bytes() for name in ("report.json", "report.md", "topk_accuracy.png")}
    killed = cli_process(*_eval(indexed_store, questions, out), env={"DPR_FAULT_POINT": "report.after_json"})
    assert killed.code == -9, killed.err
    for name in before:  # every file is complete: the earlier version or the new one
        assert (out / name).stat().st_size > 0
    json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert not list(out.glob(".*.tmp")), "a temporary file was left behind"
    assert_success(cli(*_eval(indexed_store, questions, out)))
    after = json.loads((out / "report.json").read_text(encoding="utf-8"))
    record_property("report files complete after the kill", True)
    record_property("re-run top-1 accuracy", after["systems"]["bm25"]["top_k_accuracy"]["1"])
    assert (
        after["systems"]["bm25"]["top_k_accuracy"]["1"]
        == json.loads(before["report.json"])["systems"]["bm25"]["top_k_accuracy"]["1"]
    )
