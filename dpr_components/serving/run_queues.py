"""The queues pipeline runs wait in: the reads (searches, answers, evaluations) in one, at most
``concurrent_runs`` of them at once, and the writes (a pipeline with a writer: the index route) in a queue
of their own, one at a time. A write then never waits behind the searches that arrived before it, and
the searches keep their own slots whatever the writes do; at most ``concurrent_runs + 1`` runs are at once.
``shared`` puts the writes back in the reads' queue (the former behaviour, for comparison)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # anyio loads with the server, not with the command line's options
    import anyio

WriteQueue = Literal["own", "shared"]
WRITE_QUEUES: tuple[WriteQueue, ...] = ("own", "shared")
# Writes to one store are applied one after the other anyway (the store's lock); a second slot would
# only take a core from the searches.
WRITES_AT_ONCE = 1


@dataclass(frozen=True)
class RunQueues:
    """The limiters the routes wait on: ``reads`` and ``writes`` (the same limiter when shared)."""

    reads: anyio.CapacityLimiter
    writes: anyio.CapacityLimiter

    @classmethod
    def create(cls, concurrent_runs: int, write_queue: WriteQueue = "own") -> RunQueues:
        """``concurrent_runs`` reads at once, and the writes in their own queue or in the same one."""
        import anyio

        if write_queue not in WRITE_QUEUES:
            raise ValueError(f"write_queue {write_queue!r}: must be one of {', '.join(WRITE_QUEUES)}")
        reads = anyio.CapacityLimiter(concurrent_runs)
        return cls(reads, reads if write_queue == "shared" else anyio.CapacityLimiter(WRITES_AT_ONCE))

    def for_spec(self, spec: dict[str, Any] | None) -> anyio.CapacityLimiter:
        """The queue of a pipeline with the specification ``spec``: the writes' when a component writes."""
        from dpr_components.pipeline_files.loading import writes_documents  # haystack: not at --help

        components = (spec or {}).get("components")
        return self.writes if isinstance(components, dict) and writes_documents(components) else self.reads

    def most_at_once(self) -> int:
        """The most runs at once, both queues together."""
        if self.writes is self.reads:
            return int(self.reads.total_tokens)
        return int(self.reads.total_tokens + self.writes.total_tokens)
