"""OpenMP's wait policy: ``haystack serve`` lets idle threads sleep, unless the user chose; nothing else changes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dpr_components.utils.threads import WAIT_POLICY_ENV, prefer_passive_waiting


def test_passive_waiting_is_set_when_nothing_chose_a_policy() -> None:
    environ: dict[str, str] = {}
    assert prefer_passive_waiting(environ, loaded={})
    assert environ == {WAIT_POLICY_ENV: "PASSIVE"}


def test_a_policy_the_user_chose_is_kept() -> None:
    environ = {WAIT_POLICY_ENV: "ACTIVE"}
    assert not prefer_passive_waiting(environ, loaded={})
    assert environ == {WAIT_POLICY_ENV: "ACTIVE"}


@pytest.mark.parametrize("library", ["torch", "faiss"])
def test_nothing_is_set_once_openmp_is_loaded(library: str) -> None:
    environ: dict[str, str] = {}
    assert not prefer_passive_waiting(environ, loaded={library: object()})
    assert environ == {}


def _policy_after_launch(argv: list[str]) -> str:
    """The wait policy a fresh process has after the entry point's defaults for ``argv``, and whether
    the entry point had imported torch by then."""
    script = (
        "import os, sys\n"
        "os.environ.pop('OMP_WAIT_POLICY', None)\n"
        "from dpr_components.cli.launch import apply_process_defaults\n"
        f"apply_process_defaults({argv!r})\n"
        "print(os.environ.get('OMP_WAIT_POLICY'), 'torch' in sys.modules or 'faiss' in sys.modules)\n"
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip()


def test_serve_sleeps_idle_threads_before_torch_is_loaded() -> None:
    assert _policy_after_launch(["serve", "--port", "1416"]) == "PASSIVE False"


@pytest.mark.parametrize("argv", [["run", "pipelines/qa.yml"], ["eval", "pipelines/qa.yml"], []])
def test_batch_commands_keep_openmps_default(argv: list[str]) -> None:
    assert _policy_after_launch(argv) == "None False"
