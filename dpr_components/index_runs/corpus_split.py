"""Split a corpus file into N contiguous line ranges of about equal size in bytes.

A document is one line (JSONL or DPR's TSV), so a range keeps each document, and all its
passages, in one shard. Balancing bytes rather than lines balances the encoding work when
documents differ in length (whole articles); for ``psgs_w100.tsv`` both are the same. The
split depends only on the file's bytes, so every process computes the same ranges on its
own, a re-run gives the same shards, and the shards read in order give the corpus order.

One streaming pass (1 MiB blocks) gives the ranges and the file's SHA-256, which the shards
record so that a merge refuses shards cut from different versions of the corpus."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from dpr_components.index_runs.shard_spec import MAX_SHARDS
from dpr_components.utils.line_files import existing_file

_BLOCK = 1 << 20


@dataclass(frozen=True)
class CorpusSplit:
    """``starts[i - 1]`` is the first line of shard ``i`` and ``starts[i]`` the line after its last."""

    sha256: str
    size: int
    lines: int
    starts: tuple[int, ...]

    def line_range(self, index: int) -> tuple[int, int]:
        """Lines ``[first, end)`` of shard ``index`` (1-based); empty when ``first == end``."""
        return self.starts[index - 1], self.starts[index]


def split_corpus(path: str | Path, count: int) -> CorpusSplit:
    """The ranges of ``count`` shards of the file at ``path`` (line numbers start at 1); ``count``
    may exceed the file's lines (some ranges are then empty) but not :data:`MAX_SHARDS`."""
    if not 1 <= count <= MAX_SHARDS:
        raise ValueError(f"shard count must be 1 to {MAX_SHARDS:,}, got {count:,}")
    path = existing_file(path, "corpus file")
    size = path.stat().st_size
    # Shard i begins with the first line that starts at or after byte i * size / count.
    boundaries = [i * size // count for i in range(1, count)]
    firsts: list[int] = []
    digest = hashlib.sha256()
    newlines = 0  # newlines seen in the bytes before ``offset``
    offset = 0
    with open(path, "rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
            end = offset + len(block)
            # A line starts at byte b > 0 when byte b - 1 is a newline; the first line starting at or
            # after b is 2 + (newlines in bytes [0, b - 1)).
            while len(firsts) < len(boundaries) and boundaries[len(firsts)] - 1 < end:
                cut = boundaries[len(firsts)]
                firsts.append(1 if cut == 0 else 2 + newlines + block.count(b"\n", 0, cut - 1 - offset))
            newlines += block.count(b"\n")
            offset = end
            last_byte = block[-1:]
    lines = newlines + (1 if size and last_byte != b"\n" else 0)
    firsts += [1 if cut == 0 else lines + 1 for cut in boundaries[len(firsts) :]]
    return CorpusSplit(sha256=digest.hexdigest(), size=size, lines=lines, starts=(1, *firsts, lines + 1))
