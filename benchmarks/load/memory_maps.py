"""Where a process's anonymous resident memory is, from ``/proc/PID/smaps``: glibc's main heap, its
per-thread heaps (arenas), and the other anonymous mappings (blocks above the mmap threshold: vectors,
tensors, score arrays; thread stacks).

glibc maps each per-thread heap as a region of ``HEAP_MAX_SIZE`` (64 MiB on 64-bit Linux) aligned to that
size, its unused part without access rights; so an anonymous read-write mapping starting on a 64 MiB
boundary is taken for an arena (a block of its own could start there too, rarely). Memory freed inside a
heap and not yet handed back is resident in these categories, which is what tells fragmentation from data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ARENA_ALIGNMENT = 64 * 1024 * 1024
CATEGORIES = ("main heap", "thread heaps", "other anonymous")


def _category(name: str, start: int) -> str | None:
    """The category of a read-write mapping named ``name`` (None: file-backed or a special one not counted)."""
    if name == "[heap]":
        return "main heap"
    if name in ("", "[stack]") or name.startswith("[anon"):
        return "thread heaps" if name == "" and start % ARENA_ALIGNMENT == 0 else "other anonymous"
    return None


def anonymous_breakdown(pid: int, largest: int = 8) -> dict[str, Any]:
    """Resident MB of each of :data:`CATEGORIES` in process ``pid``, the number of thread heaps, and the
    ``largest`` mappings by resident size, anonymous or file-backed ([resident MB, size MB, what])."""
    found = dict.fromkeys(CATEGORIES, 0.0)
    heaps = 0
    category: str | None = None
    mappings: list[list[Any]] = []
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
            start, end = (int(bound, 16) for bound in fields[0].split("-"))
            name = " ".join(fields[5:]) if len(fields) > 5 else ""
            category = _category(name, start) if "w" in fields[1] else None
            heaps += category == "thread heaps"
            what = category or (Path(name).name if name.startswith("/") else name) or "anonymous, read-only"
            mappings.append([0.0, round((end - start) / 2**20, 1), what])
        elif fields[:1] == ["Rss:"] and mappings:
            mappings[-1][0] = round(int(fields[1]) / 1024, 1)
            if category is not None:
                found[category] += int(fields[1]) / 1024
    top = sorted(mappings, key=lambda mapping: -mapping[0])[:largest]
    return {**{key: round(value, 1) for key, value in found.items()}, "thread heap count": heaps, "largest": top}
