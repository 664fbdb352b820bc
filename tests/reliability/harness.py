"""Tools of the reliability suite: run the CLI as a user would and judge what they see.

Every case is a test marked ``@pytest.mark.reliability(category, expect)`` whose docstring says,
in one line, what the user does. ``expect`` is what must happen:
- ``"clear error"``: exit code 2 and one line on stderr, ``error: ...``, naming the problem;
- ``"correct result"``: the command succeeds and its result is right;
- ``"nothing lost"``: after a fault, every document saved before it is still there and searches
  return what they returned before.
``python -m benchmarks.reliability.reliability_report`` runs the suite and writes docs/reliability.md."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PIPELINES = REPO / "pipelines"
EXPECTATIONS = ("clear error", "correct result", "nothing lost")


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def cli(*args: str) -> CliResult:
    """Run ``haystack ARGS`` in this process. An exception escaping the command (a traceback
    for the user) fails the test instead of being reported as an error."""
    from dpr_components.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exit_:  # argparse usage errors
            code = exit_.code if isinstance(exit_.code, int) else 2
    return CliResult(code, out.getvalue(), err.getvalue())


def cli_process(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300, cwd: Path | None = None
) -> CliResult:
    """Run ``haystack ARGS`` in a child process (for crashes, kills and concurrency)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    command = [sys.executable, "-m", "dpr_components.cli", *[str(a) for a in args]]
    done = subprocess.run(
        command, capture_output=True, text=True, env=full_env, timeout=timeout, cwd=cwd or REPO, check=False
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


def cases(argnames: str, table: dict[str, Any]) -> Any:
    """``pytest.mark.parametrize`` over ``table``'s values, each case named by its key."""
    import pytest

    return pytest.mark.parametrize(argnames, list(table.values()), ids=list(table))


def assert_clear_error(result: CliResult, *fragments: str) -> None:
    """Exit code 2, a single ``error:`` line on stderr that contains every fragment."""
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert "Traceback" not in result.err, f"traceback instead of a clear error:\n{result.err}"
    assert result.code == 2, f"exit code {result.code}, expected 2; stderr:\n{result.err}\nstdout:\n{result.out[:2000]}"
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, f"expected one 'error:' line, got:\n{result.err}"
    for fragment in fragments:
        assert fragment in errors[0], f"{fragment!r} not in {errors[0]!r}"


def assert_success(result: CliResult) -> None:
    assert "Traceback" not in result.err, result.err
    assert result.code == 0, f"exit code {result.code}; stderr:\n{result.err}"


def store_snapshot(path: Path) -> dict[str, Any]:
    """What a store holds, independent of its derived indexes: ids with a digest of each document."""
    from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

    store = EmbeddedDocumentStore(path=str(path), autosave=False)
    documents = store.filter_documents()
    digests = {}
    for doc in documents:
        vector = b"" if doc.embedding is None else json.dumps([round(x, 5) for x in doc.embedding]).encode()
        payload = json.dumps([doc.content, doc.meta], sort_keys=True).encode() + vector
        digests[doc.id] = hashlib.sha1(payload).hexdigest()[:12]
    return digests
