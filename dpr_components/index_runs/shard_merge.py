"""Write the shards of a sharded indexing run into one store, in corpus order.

Nothing is written before everything is checked (:mod:`dpr_components.index_runs.shard_check`):
the shard folder as a whole (every shard ``1..N`` of one run, same corpus, same settings, line
ranges tiling the corpus), then every passage, vector and file digest of every shard, and
the passage and document ids of all shards together. A mismatch is an error naming the shard.
The passages are then streamed shard after shard (shard ``i`` holds the lines before shard
``i + 1``'s, so this is the one-process order) and written in batches that never split a
document's passages, through any writer with ``run(documents)``: ``PassageWriter`` (any
Haystack store: the embedded store, Elasticsearch, ...) or Haystack's ``DocumentWriter``.

Where the writes go (:mod:`dpr_components.index_runs.shard_target`): a new embedded store is
built beside its folder and renamed into place at the end, so a merge that fails or is killed
leaves no store; any other store is written in place, batch after batch, each batch one write
of the store. Passage ids are stable, so a merge that was interrupted there can be run again
and ends with the store it would have given."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haystack import Document

from dpr_components.index_runs.shard_check import (
    Shard,
    check_shard_contents,
    document_of,
    find_shards,
)
from dpr_components.index_runs.shard_spec import BATCH_PASSAGES
from dpr_components.index_runs.shard_target import (
    new_store_folder,
    store_built_beside,
    writer_on,
)
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore


@dataclass(frozen=True)
class MergeResult:
    shards: int
    documents: int
    passages: int


def merge_shards(
    shard_dir: str | Path,
    writer: Any,
    batch_passages: int = BATCH_PASSAGES,
    report: Callable[[str], None] | None = None,
) -> MergeResult:
    """Check the shards in ``shard_dir`` (all of it, see the module docstring), then write all
    their passages with ``writer.run(documents=...)`` in batches of about ``batch_passages``."""
    if batch_passages <= 0:
        raise ValueError(f"batch size must be positive, got {batch_passages}")
    if not callable(getattr(writer, "run", None)):
        raise ValueError(f"merge needs a writer with run(documents), got {type(writer).__name__}")
    shards = find_shards(shard_dir)
    check_shard_contents(shards, report)
    folder = new_store_folder(writer)
    if folder is None:
        passages = _write_shards(shards, writer, batch_passages, report)
    else:
        with store_built_beside(folder) as building:
            passages = _write_shards(shards, writer_on(writer, building), batch_passages, report)
    return MergeResult(len(shards), sum(s.manifest.get("documents", 0) for s in shards), passages)


def _write_shards(shards: list[Shard], writer: Any, batch_passages: int, report: Callable[[str], None] | None) -> int:
    """Write the checked shards through ``writer``, then save the store's indexes where it can; the passages written."""
    if callable(getattr(writer, "warm_up", None)):
        writer.warm_up()
    passages = 0
    for shard in shards:
        for batch in document_batches(shard.passages(), batch_passages):
            writer.run(documents=batch)
            passages += len(batch)
        if report:
            report(f"merged shard {shard.spec}: {shard.manifest['passages']:,} passages ({passages:,} in all)")
    store = getattr(writer, "document_store", None)
    if isinstance(store, EmbeddedDocumentStore):
        store.save()  # errors (a full disk) surface here, not in a finaliser
    return passages


def document_batches(passages: Iterator[Document], size: int) -> Iterator[list[Document]]:
    """Batches of at least ``size`` passages (except the last), cut only between documents:
    ``PassageWriter`` replaces a document's stored passages by those of the batch."""
    batch: list[Document] = []
    for passage in passages:
        if len(batch) >= size and document_of(passage) != document_of(batch[-1]):
            yield batch
            batch = []
        batch.append(passage)
    if batch:
        yield batch
