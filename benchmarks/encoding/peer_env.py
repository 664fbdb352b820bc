"""The peers' own environment: sentence-transformers with its torch, ONNX Runtime and OpenVINO back ends,
in a git-ignored virtual environment beside the project's (their optimum packages pin other
transformers and torch versions than the project runs). Standard library only.

torch's CPU build is installed first (from pip's configured sources when they hold it, else from the
PyTorch CPU index), then the peers under ``peer_constraints.txt``, which pins torch so that nothing swaps in
a CUDA build. A stamp file records what was installed: a second run with the same pins does
nothing. pip's output goes to ``install.log`` inside the environment.

    python -m benchmarks.encoding.peer_env            # creates .venv-peers (a few hundred MB)
    python -m benchmarks.encoding.peer_env --force    # installs again
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PEER_ENV = REPO_ROOT / ".venv-peers"
CONSTRAINTS = Path(__file__).with_name("peer_constraints.txt")
REQUIREMENTS = ("sentence-transformers[onnx,openvino]",)
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
STAMP = "peer-env.stamp"
LOG = "install.log"
CHECK = (
    "import torch, sentence_transformers, optimum.onnxruntime, optimum.intel; "
    "assert torch.version.cuda is None, 'a CUDA build of torch was installed'; "
    "print('torch', torch.__version__, 'sentence-transformers', sentence_transformers.__version__)"
)


class PeerEnvError(RuntimeError):
    """The peer environment could not be made."""


def pinned(constraints: str) -> dict[str, str]:
    """``name: version`` of every ``name==version`` line of a constraints file (comments skipped)."""
    pins = {}
    for line in constraints.splitlines():
        match = re.fullmatch(r"\s*([A-Za-z0-9_.\-\[\]]+)\s*==\s*([^\s#;]+)\s*(#.*)?", line)
        if match:
            pins[match.group(1).lower()] = match.group(2)
    return pins


def torch_pin(constraints: str) -> str:
    """The ``torch==X`` requirement of the constraints (an error when torch is not pinned)."""
    version = pinned(constraints).get("torch")
    if version is None:
        raise PeerEnvError(f"{CONSTRAINTS.name} must pin torch (torch==X) so that no CUDA build is pulled")
    return f"torch=={version}"


def stamp_text(constraints: str) -> str:
    """What the stamp file holds: a digest of the pins and requirements the environment was made with."""
    digest = hashlib.sha256((constraints + "\n".join(REQUIREMENTS)).encode()).hexdigest()
    return f"{digest}\n"


def python_of(env: Path) -> Path:
    """The environment's interpreter."""
    return env / "bin" / "python"


def is_ready(env: Path = PEER_ENV) -> bool:
    """Whether ``env`` was made with the current pins."""
    stamp = env / STAMP
    current = stamp_text(CONSTRAINTS.read_text(encoding="utf-8"))
    return python_of(env).is_file() and stamp.is_file() and stamp.read_text(encoding="utf-8") == current


def run_logged(command: Sequence[str | Path], log: Path, what: str) -> None:
    """Run ``command``, its output appended to ``log``; a ``PeerEnvError`` naming ``what`` when it fails."""
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"\n$ {' '.join(map(str, command))}\n")
        handle.flush()
        code = subprocess.call([str(part) for part in command], stdout=handle, stderr=subprocess.STDOUT)
    if code != 0:
        tail = "".join(log.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)[-15:])
        raise PeerEnvError(f"{what} failed (exit {code}); the end of {log}:\n{tail}")


def install_torch(pip: list[str], requirement: str, log: Path) -> None:
    """torch's CPU build (``+cpu``): from pip's configured sources when one holds it (a local wheel), else
    from the PyTorch CPU index."""
    cpu_build = f"{requirement}+cpu"
    try:
        run_logged([*pip, cpu_build], log, f"{cpu_build} from the configured sources")
    except PeerEnvError:
        run_logged([*pip, "--index-url", TORCH_CPU_INDEX, cpu_build], log, f"{cpu_build} from the CPU index")


def create(env: Path = PEER_ENV, force: bool = False) -> Path:
    """Make ``env`` (unless it is ready and not ``force``); its interpreter."""
    if is_ready(env) and not force:
        return python_of(env)
    constraints = CONSTRAINTS.read_text(encoding="utf-8")
    (env / STAMP).unlink(missing_ok=True)
    if not python_of(env).is_file():
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    log = env / LOG
    print(f"installing the peers into {env} (log: {log})", flush=True)
    pip = [str(python_of(env)), "-m", "pip", "install", "--disable-pip-version-check"]
    install_torch(pip, torch_pin(constraints), log)
    run_logged([*pip, "-c", CONSTRAINTS, *REQUIREMENTS], log, "installing " + " ".join(REQUIREMENTS))
    run_logged([python_of(env), "-c", CHECK], log, "importing the peers")
    (env / STAMP).write_text(stamp_text(constraints), encoding="utf-8")
    return python_of(env)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", type=Path, default=PEER_ENV, help="where the environment goes (default .venv-peers)")
    parser.add_argument("--force", action="store_true", help="install again even when the stamp matches")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        print(create(args.env, args.force))
    except PeerEnvError as error:
        sys.exit(f"peer environment: {error}")


if __name__ == "__main__":
    main()
