"""``haystack --help`` and argument errors answer without loading Haystack, torch or FAISS: the command's
arguments live apart from the commands, which are imported once the arguments are known to be right."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

HEAVY = ("haystack", "torch", "faiss", "transformers", "numpy")
PROBE = """
import contextlib, io, sys
from dpr_components.cli.main import main
codes = []
for argv in {argvs!r}:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            codes.append(main(argv))
        except SystemExit as exit_:
            codes.append(exit_.code)
print(codes)
print(sorted(name for name in {heavy!r} if name in sys.modules))
"""


def _probe(argvs: list[list[str]]) -> tuple[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(argvs=argvs, heavy=HEAVY)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    codes, loaded = done.stdout.strip().splitlines()
    return codes, loaded


def test_help_and_argument_errors_load_no_heavy_library() -> None:
    argvs = [
        ["--help"],
        ["run", "--help"],
        ["serve", "--help"],
        ["run", "qa", "-q", "x", "--top-k", "0"],  # a bound checked before the pipeline loads
        ["eval", "bm25", "--limit", "many"],
        ["export-st"],  # a missing argument
        ["no-such-command"],
    ]
    codes, loaded = _probe(argvs)
    assert codes == "[0, 0, 0, 2, 2, 2, 2]"
    assert loaded == "[]", f"loaded before any command ran: {loaded}"


def test_a_command_loads_what_it_needs() -> None:
    codes, loaded = _probe([["run", "no-such-pipeline.yml", "-q", "x"]])
    assert codes == "[2]" and "haystack" in loaded  # the run command was imported and refused the file


def test_serve_without_its_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from dpr_components.cli import serve_command

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "hayhooks" else real(name, *a))
    with pytest.raises(
        ValueError, match=r"needs hayhooks, which it installs with: pip install 'dpr-components\[serve\]'"
    ):
        serve_command.check_serve_extra()
