"""Shared pieces of the model and training cases: tiny training data, training commands, a
malicious pickle, and running a library call the way the command line reports errors."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from tests.reliability.harness import REPO, CliResult


def train_args(data: Path, out: Path, model: Path, *extra: str) -> list[str]:
    """``python -m training.retriever.train`` arguments of a 6-step run (checkpoints at steps 2, 3, 4 and 6)."""
    settings = {
        "model": str(model),
        "batch_size": 4,
        "epochs": 2,
        "max_length": 32,
        "learning_rate": 1e-3,
        "checkpoint_every": 2,
        "log_every": 1,
        "threads": 1,
        "dropout": 0.1,
    }
    sets = [item for name, value in settings.items() for item in ("--set", f"{name}={json.dumps(value)}")]
    return ["--data", str(data), "--out", str(out), *sets, *extra]


def run_main(main: Callable[[list[str]], int], args: list[str]) -> CliResult:
    """A script's ``main(args)`` in this process, with its output captured (exceptions escape)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 2
    return CliResult(code, out.getvalue(), err.getvalue())


def train_command(args: list[str]) -> CliResult:
    """``python -m training.retriever.train ARGS`` in this process."""
    from training.retriever.train import main

    return run_main(main, args)


def train_process(args: list[str], fault_point: str | None = None) -> CliResult:
    """``python -m training.retriever.train ARGS`` in a child process, killed at ``fault_point``."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    if fault_point:
        env["DPR_FAULT_POINT"] = fault_point
    done = subprocess.run(
        [sys.executable, "-m", "training.retriever.train", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
        check=False,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


def as_command(call: Callable[[], Any]) -> CliResult:
    """What a script calling the library sees, reported as the command line does: a ``ValueError``
    becomes one ``error:`` line and exit code 2; any other exception escapes (a traceback)."""
    try:
        call()
    except ValueError as error:
        return CliResult(2, "", f"error: {error}\n")
    return CliResult(0, "", "")


class _CreatesFile:
    """Unpickling this object creates ``marker``: what a replaced checkpoint file could do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def write_malicious_pickle(path: Path, marker: Path, payload: Any = None) -> None:
    """A ``torch.save`` file that runs code when loaded with ``weights_only=False``."""
    torch.save({"optimizer": _CreatesFile(marker), "scheduler": payload}, path)


def same_weights(folder_a: Path, folder_b: Path) -> bool:
    """Every safetensors file under ``folder_a`` has an identical twin under ``folder_b``."""
    files = sorted(p.relative_to(folder_a) for p in folder_a.rglob("*.safetensors"))
    assert files, f"no weights in {folder_a}"
    for name in files:
        a, b = load_file(str(folder_a / name)), load_file(str(folder_b / name))
        if a.keys() != b.keys() or not all(torch.equal(a[k], b[k]) for k in a):
            return False
    return True


def poison_weights(folder: Path, value: float = float("nan")) -> str:
    """Fill the word embeddings in ``folder``'s model.safetensors with ``value`` (read by every forward
    pass: what a diverged run leaves); returns the tensor's name."""
    from safetensors.torch import save_file

    path = folder / "model.safetensors"
    tensors = load_file(str(path))
    name = next(n for n in sorted(tensors) if n.endswith("word_embeddings.weight"))
    tensors[name] = torch.full_like(tensors[name], value)
    save_file(tensors, str(path), metadata={"format": "pt"})
    return name


def edit_json(path: Path, **changes: Any) -> None:
    """Set keys of the JSON object in ``path`` (a config file of a model folder)."""
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    data.update(changes)
    path.write_text(json.dumps(data), encoding="utf-8")
