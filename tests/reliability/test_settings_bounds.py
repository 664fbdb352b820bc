"""Thread variables and count options out of range: every command refuses them at start, in one format.

``DPR_QUERY_THREADS``, ``DPR_ENCODE_THREADS`` and ``DPR_READ_THREADS`` take 1 to the usable cores; the
options that set counts and sizes have their own ranges (dpr_components/cli/option_bounds.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dpr_components.utils import threads
from dpr_components.utils.input_files import INPUT_ROOT_ENV
from dpr_components.utils.threads import ENCODE_THREADS_ENV, QUERY_THREADS_ENV, READ_THREADS_ENV
from tests.reliability.harness import PIPELINES, assert_clear_error, assert_success, cli

CLEAR = pytest.mark.reliability(category="settings", expect="clear error")
CORRECT = pytest.mark.reliability(category="settings", expect="correct result")
CORES = threads.usable_cores()
RANGE = f"must be a whole number from 1 to {CORES} (the usable cores)"


def _commands(tmp_path: Path) -> dict[str, list[object]]:
    """One invocation of every command that runs pipelines; each would fail later on its missing inputs."""
    missing = tmp_path / "missing"
    return {
        "run": ["run", PIPELINES / "bm25.yml", "-q", "x", "--store", missing],
        "eval": ["eval", PIPELINES / "bm25.yml", "--questions", missing / "q.jsonl", "--store", missing],
        "fit-lambda": ["fit-lambda", PIPELINES / "search.yml", "--questions", missing / "q.jsonl"],
        "serve": ["serve", "--pipelines-dir", missing, "--input-root", tmp_path / "served"],
        "merge-shards": ["merge-shards", PIPELINES / "index.yml", missing],
        "index-ray": ["index-ray", PIPELINES / "index.yml", "--shards", "2", "--shard-dir", missing],
    }


COMMANDS = ("run", "eval", "fit-lambda", "serve", "merge-shards", "index-ray")


@CLEAR
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("name", "value"),
    [(READ_THREADS_ENV, "10000"), (QUERY_THREADS_ENV, "10000"), (ENCODE_THREADS_ENV, "0"), (ENCODE_THREADS_ENV, "-1")],
    ids=["read-10000", "query-10000", "encode-0", "encode-minus-1"],
)
def test_thread_variable_out_of_range(
    command: str, name: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """haystack COMMAND with DPR_READ_THREADS=10000, DPR_QUERY_THREADS=10000 or DPR_ENCODE_THREADS=0 or -1"""
    monkeypatch.setenv(name, value)
    result = cli(*_commands(tmp_path)[command])
    assert_clear_error(result, f"{name}={value}: {RANGE}; unset it or choose a value in that range")
    assert not (tmp_path / "served").exists()  # refused before serve made its input root


@CLEAR
@pytest.mark.parametrize("command", ["run", "serve"])
def test_thread_variable_not_a_number(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """haystack run or serve with DPR_READ_THREADS=two"""
    monkeypatch.setenv(READ_THREADS_ENV, "two")
    assert_clear_error(cli(*_commands(tmp_path)[command]), f"{READ_THREADS_ENV}='two': {RANGE}")


@CLEAR
@pytest.mark.parametrize(
    ("command", "option", "value", "fragment"),
    [
        ("serve", "--query-threads", "10000", f"--query-threads 10000: {RANGE}"),
        ("serve", "--concurrent-runs", "10000", "--concurrent-runs 10000: must be a whole number from 1 to"),
        ("serve", "--port", "70000", "--port 70000: must be a whole number from 1 to 65,535"),
        ("serve", "--max-body-bytes", "99999999999", "--max-body-bytes 99999999999: must be a whole number from 1 to"),
        ("run", "--top-k", "true", "--top-k 'true': must be a whole number from 1 to 10,000"),
        ("run", "--top-k", "1000000000", "--top-k 1000000000: must be a whole number from 1 to 10,000"),
        ("eval", "--limit", "0", "--limit 0: must be a whole number from 1"),
        ("merge-shards", "--batch-size", "10000000", "--batch-size 10000000: must be a whole number from 1 to 100,000"),
        ("index-ray", "--threads", "10000", f"--threads 10000: {RANGE}"),
        ("index-ray", "--workers", "0", f"--workers 0: {RANGE}"),
        ("index-ray", "--max-retries", "-1", "--max-retries -1: must be a whole number from 0 to 100"),
    ],
    ids=lambda value: str(value)[:24],
)
def test_count_option_out_of_range(command: str, option: str, value: str, fragment: str, tmp_path: Path) -> None:
    """haystack COMMAND with a thread, count or size option out of its range (or not a number)"""
    result = cli(*_commands(tmp_path)[command], option, value)
    assert_clear_error(result, fragment, "choose a value in that range")


@CORRECT
def test_run_with_thread_variables_in_range(indexed_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """haystack run with every thread variable at the usable cores"""
    for name in (QUERY_THREADS_ENV, ENCODE_THREADS_ENV, READ_THREADS_ENV):
        monkeypatch.setenv(name, str(CORES))
    result = cli("run", PIPELINES / "bm25.yml", "--store", indexed_store, "-q", "who wrote hamlet", "--top-k", "1")
    assert_success(result)
    assert "Hamlet" in result.out


@CORRECT
def test_serve_option_replaces_a_bad_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """haystack serve --query-threads 1 with DPR_QUERY_THREADS=10000 set: the option wins, the variable is not read"""
    monkeypatch.setenv(QUERY_THREADS_ENV, "10000")
    monkeypatch.setenv(INPUT_ROOT_ENV, str(tmp_path / "served"))  # serve sets it: restored after the test
    result = cli(*_commands(tmp_path)["serve"], "--query-threads", "1")
    assert_clear_error(result, "pipelines folder")  # it got past the thread checks, to the missing folder


@CLEAR
def test_training_threads_above_the_cores(tmp_path: Path, tiny_bert_dir: Path) -> None:
    """A DPR training run whose settings ask for 10,000 threads"""
    from dpr_components.encoder_training.settings import EncoderTrainingSettings
    from dpr_components.encoder_training.train import train

    config = EncoderTrainingSettings(model=str(tiny_bert_dir), threads=10_000)
    with pytest.raises(ValueError, match=re.escape(f"training setting 'threads' 10000: {RANGE}")):
        train(config, [], str(tmp_path / "run"))
    assert not (tmp_path / "run").exists()  # refused before the run folder was made


@CLEAR
def test_hard_link_policy_with_a_typo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """haystack serve with DPR_INPUT_HARD_LINKS=alow (a typo of allow)"""
    monkeypatch.setenv("DPR_INPUT_HARD_LINKS", "alow")
    result = cli(*_commands(tmp_path)["serve"])
    assert_clear_error(result, "DPR_INPUT_HARD_LINKS='alow': must be 'allow' or 'refuse' (the default)")
