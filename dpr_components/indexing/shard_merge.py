"""Write the shards of a sharded indexing run into one store, in corpus order.

Before anything is written, the shard folder is checked as a whole: every shard ``1..N`` is
there and complete, all were cut from the same corpus file (SHA-256) with the same settings
(reader, splitter, encoder fingerprint), and their line ranges tile the corpus. A mismatch is
an error naming the shard. The passages are then streamed shard after shard (shard ``i``
holds the lines before shard ``i + 1``'s, so this is the one-process order) and written in
batches that never split a document's passages, through any writer with ``run(documents)``:
``PassageWriter`` (any Haystack store: the embedded store, Elasticsearch, ...) or Haystack's
``DocumentWriter``. Stable passage ids make a merge that was interrupted safe to run again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haystack import Document

from dpr_components.indexing.shard_files import ShardError, read_manifest, shard_passages
from dpr_components.indexing.shard_spec import ShardSpec, shard_from_folder_name

BATCH_PASSAGES = 1000
_SHOWN = 8  # missing shards named in an error


@dataclass(frozen=True)
class Shard:
    spec: ShardSpec
    folder: Path
    manifest: dict[str, Any]


@dataclass(frozen=True)
class MergeResult:
    shards: int
    documents: int
    passages: int


def find_shards(shard_dir: str | Path) -> list[Shard]:
    """The complete, matching shards ``1..N`` in ``shard_dir``, in order; :class:`ShardError` otherwise."""
    root = Path(shard_dir)
    if not root.is_dir():
        raise ShardError(f"shard folder {root} {'is not a folder' if root.exists() else 'does not exist'}")
    found = {spec: path for path in sorted(root.iterdir()) if path.is_dir() and (spec := shard_from_folder_name(path.name))}
    hint = f"make them with: haystack run pipelines/index.yml --input path=CORPUS --shard i/N --shard-dir {root}"
    if not found:
        raise ShardError(f"{root} holds no shard folders (shard-<i>-of-<N>); {hint}")
    counts = sorted({spec.count for spec in found})
    if len(counts) > 1:
        raise ShardError(f"{root} mixes shards of runs split {counts} ways: keep the folders of one run only")
    count = counts[0]
    missing = [i for i in range(1, count + 1) if ShardSpec(i, count) not in found]
    if missing:
        names = ", ".join(f"{i}/{count}" for i in missing[:_SHOWN]) + (" ..." if len(missing) > _SHOWN else "")
        unfinished = [p.name for p in root.glob(".shard-*.tmp")]
        note = f" ({len(unfinished)} unfinished run(s) left temporary folders)" if unfinished else ""
        raise ShardError(f"{root}: {len(missing)} of {count} shards missing: {names}{note}; run them, then merge again")
    shards = [Shard(spec, found[spec], read_manifest(found[spec])) for spec in sorted(found, key=lambda s: s.index)]
    _check_consistent(shards)
    return shards


def _check_consistent(shards: list[Shard]) -> None:
    first = shards[0]
    for shard in shards:
        manifest = shard.manifest
        if manifest.get("shard") != str(shard.spec):
            raise ShardError(f"shard folder {shard.folder} holds shard {manifest.get('shard')}, not {shard.spec}: was it renamed?")
        corpus, reference = manifest.get("corpus") or {}, first.manifest.get("corpus") or {}
        if corpus.get("sha256") != reference.get("sha256"):
            raise ShardError(
                f"shard {shard.spec} ({shard.folder}) was cut from another corpus than shard {first.spec}: "
                f"{corpus.get('file')} sha256 {str(corpus.get('sha256'))[:12]}... vs {reference.get('file')} "
                f"sha256 {str(reference.get('sha256'))[:12]}...; run every shard on the same file"
            )
        difference = _first_difference(manifest.get("settings"), first.manifest.get("settings"))
        if difference is not None:
            raise ShardError(
                f"shard {shard.spec} ({shard.folder}) was made with other settings than shard {first.spec}: "
                f"{difference}; run every shard with the same pipeline and --set options"
            )
        dims = {s.manifest["dim"] for s in (shard, first) if s.manifest["passages"]}
        if len(dims) > 1:
            raise ShardError(f"shard {shard.spec} ({shard.folder}) has vectors of another size than shard {first.spec}: {sorted(dims)}")
    expected = 1
    for shard in shards:
        lines = shard.manifest.get("lines")
        if not (isinstance(lines, list) and len(lines) == 2 and lines[0] == expected and lines[1] >= lines[0]):
            raise ShardError(f"shard {shard.spec} ({shard.folder}) covers corpus lines {lines}, expected to start at line {expected}")
        expected = lines[1]
    total = (first.manifest.get("corpus") or {}).get("lines")
    if not isinstance(total, int) or expected != total + 1:
        raise ShardError(f"the shards cover corpus lines 1 to {expected - 1}, the corpus has {total}")


def _first_difference(value: Any, reference: Any, path: str = "") -> str | None:
    """The first setting (``component.parameter``) that differs, described, or ``None``."""
    if isinstance(value, dict) and isinstance(reference, dict):
        for key in sorted(set(value) | set(reference), key=str):
            found = _first_difference(value.get(key), reference.get(key), f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
        return None
    return None if value == reference else f"{path or 'settings'} is {value!r}, there {reference!r}"


def merge_shards(
    shard_dir: str | Path,
    writer: Any,
    batch_passages: int = BATCH_PASSAGES,
    report: Callable[[str], None] | None = None,
) -> MergeResult:
    """Check the shards in ``shard_dir`` (:func:`find_shards`), then write all their passages with
    ``writer.run(documents=...)`` in batches of about ``batch_passages``."""
    if batch_passages <= 0:
        raise ValueError(f"batch size must be positive, got {batch_passages}")
    if not callable(getattr(writer, "run", None)):
        raise ValueError(f"merge needs a writer with run(documents), got {type(writer).__name__}")
    shards = find_shards(shard_dir)
    if callable(getattr(writer, "warm_up", None)):
        writer.warm_up()
    passages = 0
    for shard in shards:
        for batch in document_batches(shard_passages(shard.folder, shard.manifest), batch_passages):
            writer.run(documents=batch)
            passages += len(batch)
        if report:
            report(f"merged shard {shard.spec}: {shard.manifest['passages']:,} passages ({passages:,} in all)")
    return MergeResult(len(shards), sum(s.manifest.get("documents", 0) for s in shards), passages)


def document_batches(passages: Iterator[Document], size: int) -> Iterator[list[Document]]:
    """Batches of at least ``size`` passages (except the last), cut only between documents:
    ``PassageWriter`` replaces a document's stored passages by those of the batch."""
    batch: list[Document] = []
    for passage in passages:
        if len(batch) >= size and _document_of(passage) != _document_of(batch[-1]):
            yield batch
            batch = []
        batch.append(passage)
    if batch:
        yield batch


def _document_of(passage: Document) -> str:
    source = passage.meta.get("document_id")
    return source if isinstance(source, str) else passage.id
