"""The ``haystack`` command's entry point: process-wide settings that must precede importing torch.

``haystack serve`` answers questions while other work (training jobs, indexing pipelines) may run in
the same process, so it lets idle OpenMP threads sleep (docs/threads.md, "Idle threads"). The other
commands are batch work and keep OpenMP's default, which spares their threads a wake-up at each
parallel region."""

from __future__ import annotations

import sys

from dpr_components.utils.threads import prefer_passive_waiting

LATENCY_COMMANDS = frozenset({"serve"})


def apply_process_defaults(argv: list[str]) -> None:
    """Set what the command named first in ``argv`` needs before torch and FAISS load."""
    if argv[:1] and argv[0] in LATENCY_COMMANDS:
        prefer_passive_waiting()


def main() -> int:
    """Run the ``haystack`` command (``dpr_components.cli.main.main``) after the process defaults."""
    apply_process_defaults(sys.argv[1:])
    from dpr_components.cli.main import main as run_command

    return run_command()
