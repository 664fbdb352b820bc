"""Which shard a process encodes: ``i/N`` (1 <= i <= N), or ``auto`` from the launcher's variables.

``auto`` reads, in this order: ``RANK``/``WORLD_SIZE`` (torchrun and most launchers),
``SLURM_ARRAY_TASK_ID``/``SLURM_ARRAY_TASK_COUNT`` (a SLURM array, counted from
``SLURM_ARRAY_TASK_MIN``), ``SLURM_PROCID``/``SLURM_NTASKS`` (``srun`` tasks).

N is at most :data:`MAX_SHARDS`, checked while parsing, before anything is allocated per shard
(a shard run also refuses N above the corpus's line count, once it has counted them)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from dpr_components.utils.validation import short_repr

BATCH_PASSAGES = 1000  # passages per write of a merge: each batch is held in memory with its vectors
MAX_RETRIES = 2  # retries of a shard whose worker died or hit an OSError (index-ray)

SPEC_PATTERN = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
FOLDER_PATTERN = re.compile(r"^shard-(\d+)-of-(\d+)$")
MAX_SHARDS = 99_999  # five-digit folder names, which sort in shard order; far more processes than any run needs
_HINT = "expected i/N with 1 <= i <= N (e.g. --shard 2/8) or auto"
_DIGITS = 18  # a longer number is over the limit anyway (and int() refuses those of over 4,300 digits)


@dataclass(frozen=True)
class ShardSpec:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.index <= self.count:
            raise ValueError(f"--shard: {_HINT}, got {self.index}/{self.count}")
        if self.count > MAX_SHARDS:
            raise ValueError(f"--shard {self}: at most {MAX_SHARDS:,} shards (and no more than the corpus has lines)")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def folder_name(self) -> str:
        """The shard's folder inside the shard directory; names sort in shard order."""
        return f"shard-{self.index:05d}-of-{self.count:05d}"


def parse_shard_spec(text: str, environ: Mapping[str, str] | None = None) -> ShardSpec:
    """``i/N`` as a :class:`ShardSpec`; ``auto`` asks the launcher (see the module docstring)."""
    if not isinstance(text, str):
        raise ValueError(f"--shard: {_HINT}, got {text!r}")
    if text.strip().lower() == "auto":
        return shard_from_environment(os.environ if environ is None else environ)
    match = SPEC_PATTERN.match(text)
    if match is None:
        raise ValueError(f"--shard: {_HINT}, got {short_repr(text)}")
    if any(len(group.lstrip("0")) > _DIGITS for group in match.groups()):
        raise ValueError(
            f"--shard {short_repr(text.strip())}: at most {MAX_SHARDS:,} shards (and no more than the corpus has lines)"
        )
    return ShardSpec(int(match.group(1)), int(match.group(2)))


def shard_from_folder_name(name: str) -> ShardSpec | None:
    """The shard a folder named ``shard-00002-of-00008`` holds, or ``None`` for any other name.

    :raises ValueError: for such a name with numbers no run makes (``shard-00009-of-00008``, or
        more than :data:`MAX_SHARDS` shards)."""
    match = FOLDER_PATTERN.match(name)
    if match is None:
        return None
    index, count = int(match.group(1)), int(match.group(2))
    if not 1 <= index <= count <= MAX_SHARDS:
        raise ValueError(f"{name}: no run makes shard {index:,} of {count:,} (runs have 1 <= i <= N <= {MAX_SHARDS:,})")
    return ShardSpec(index, count)


def _integer(environ: Mapping[str, str], name: str) -> int:
    value = environ[name].strip()
    if not value.lstrip("-").isdecimal() or len(value.lstrip("-0")) > _DIGITS:
        raise ValueError(
            f"--shard auto: {name}={short_repr(environ[name])} is not an integer of at most {_DIGITS} digits"
        )
    return int(value)


def shard_from_environment(environ: Mapping[str, str]) -> ShardSpec:
    """The shard of this process according to the launcher's environment variables."""
    if "RANK" in environ and "WORLD_SIZE" in environ:
        return _checked(_integer(environ, "RANK") + 1, _integer(environ, "WORLD_SIZE"), "RANK/WORLD_SIZE")
    if "SLURM_ARRAY_TASK_ID" in environ and "SLURM_ARRAY_TASK_COUNT" in environ:
        first = _integer(environ, "SLURM_ARRAY_TASK_MIN") if "SLURM_ARRAY_TASK_MIN" in environ else 0
        index = _integer(environ, "SLURM_ARRAY_TASK_ID") - first + 1
        return _checked(
            index, _integer(environ, "SLURM_ARRAY_TASK_COUNT"), "SLURM_ARRAY_TASK_ID/COUNT (use --array=1-N or 0-(N-1))"
        )
    if "SLURM_PROCID" in environ and "SLURM_NTASKS" in environ:
        return _checked(_integer(environ, "SLURM_PROCID") + 1, _integer(environ, "SLURM_NTASKS"), "SLURM_PROCID/NTASKS")
    raise ValueError(
        "--shard auto: no launcher variables found (RANK and WORLD_SIZE, SLURM_ARRAY_TASK_ID and "
        "SLURM_ARRAY_TASK_COUNT, or SLURM_PROCID and SLURM_NTASKS); give --shard i/N"
    )


def _checked(index: int, count: int, source: str) -> ShardSpec:
    if not 1 <= index <= count:
        raise ValueError(f"--shard auto: {source} give shard {index}/{count}, outside 1..{count}")
    return ShardSpec(index, count)
