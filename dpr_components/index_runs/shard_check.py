"""Everything a merge checks before its first write, in two steps.

:func:`find_shards` (reads the folder names and manifests only; milliseconds): every shard
``1..N`` of one run is there and complete, N is no more than :data:`MAX_SHARDS` nor than the
corpus's line count in the manifests (a stray ``shard-00001-of-999999999`` is refused at once,
never enumerated), all were cut from the same corpus file (SHA-256) with the same settings
(reader, splitter, encoder fingerprint), and their line ranges tile the corpus.

:func:`check_shard_contents` (reads every shard to the end): every passage and vector
(:func:`shard_records`: the fields, finite and not all-zero vectors, the counts, the files' SHA-256 digests),
then the shards together: each passage id once, and each document's passages consecutive
within one shard (the writer replaces a document's stored passages by those of one batch, so
a document met twice would lose its first passages). Ids are kept as 64-bit digests (8 bytes a
passage, about 170 MB at 21M); a repeated digest is confirmed by reading the ids again, so a
digest collision never refuses a good merge.

A mismatch is an error naming the shard."""

from __future__ import annotations

import hashlib
import itertools
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document

from dpr_components.index_runs.shard_files import (
    PASSAGES,
    FileIdentity,
    ShardError,
    read_manifest,
    shard_passages,
    shard_records,
)
from dpr_components.index_runs.shard_spec import ShardSpec, shard_from_folder_name

_SHOWN = 8  # missing shards named in an error


@dataclass(frozen=True)
class Shard:
    spec: ShardSpec
    folder: Path
    manifest: dict[str, Any]
    # Identities of its files when first read: a later read refuses files replaced in between.
    opened: dict[str, FileIdentity] = field(default_factory=dict, compare=False)

    def passages(self) -> Iterator[Document]:
        """Its passages, checked (:func:`shard_passages`), from the files read the first time."""
        return shard_passages(self.folder, self.manifest, self.opened)

    def records(self) -> Iterator[tuple[dict[str, Any], np.ndarray]]:
        """Its passages' fields and vectors, checked (:func:`shard_records`), from the files read the first time."""
        return shard_records(self.folder, self.manifest, self.opened)


def find_shards(shard_dir: str | Path) -> list[Shard]:
    """The complete, matching shards ``1..N`` in ``shard_dir``, in order; :class:`ShardError` otherwise."""
    root = Path(shard_dir)
    if not root.is_dir():
        raise ShardError(f"shard folder {root} {'is not a folder' if root.exists() else 'does not exist'}")
    found = _shard_folders(root)
    if not found:
        raise ShardError(
            f"{root} holds no shard folders (shard-<i>-of-<N>); make them with: "
            f"haystack run pipelines/index.yml --input path=CORPUS --shard i/N --shard-dir {root}"
        )
    counts = sorted({spec.count for spec in found})
    if len(counts) > 1:
        raise ShardError(f"{root} mixes shards of runs split {counts} ways: keep the folders of one run only")
    shards = [Shard(spec, found[spec], read_manifest(found[spec])) for spec in sorted(found, key=lambda s: s.index)]
    _check_count(shards)
    _check_complete(root, shards)
    _check_consistent(shards)
    return shards


def _shard_folders(root: Path) -> dict[ShardSpec, Path]:
    found: dict[ShardSpec, Path] = {}
    for path in sorted(root.iterdir()):
        try:
            spec = shard_from_folder_name(path.name)
        except ValueError as error:
            raise ShardError(f"{root}: {error}; remove that folder") from None
        if spec is not None and path.is_dir():
            found[spec] = path
    return found


def _check_count(shards: list[Shard]) -> None:
    """N no larger than the corpus's line count (a shard run refuses more; a folder of another run may not)."""
    for shard in shards:
        lines = (shard.manifest.get("corpus") or {}).get("lines")
        if isinstance(lines, int) and shard.spec.count > lines:
            raise ShardError(
                f"shard folder {shard.folder} is one of {shard.spec.count:,} shards, but its manifest's corpus has "
                f"{lines:,} lines (no run cuts more shards than lines): remove it"
            )


def _check_complete(root: Path, shards: list[Shard]) -> None:
    count = shards[0].spec.count
    if len(shards) == count:
        return
    present = {shard.spec.index for shard in shards}
    shown = list(itertools.islice((i for i in range(1, count + 1) if i not in present), _SHOWN))  # stops after _SHOWN
    names = ", ".join(f"{i}/{count}" for i in shown) + (" ..." if count - len(shards) > _SHOWN else "")
    unfinished = [p.name for p in root.glob(".shard-*.tmp")]
    note = f" ({len(unfinished)} unfinished run(s) left temporary folders)" if unfinished else ""
    raise ShardError(
        f"{root}: {count - len(shards):,} of {count:,} shards missing: {names}{note}; run them, then merge again"
    )


def _check_consistent(shards: list[Shard]) -> None:
    first = shards[0]
    for shard in shards:
        manifest = shard.manifest
        if manifest.get("shard") != str(shard.spec):
            raise ShardError(
                f"shard folder {shard.folder} holds shard {manifest.get('shard')}, not {shard.spec}: was it renamed?"
            )
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
            raise ShardError(
                f"shard {shard.spec} ({shard.folder}) has vectors of another size than shard {first.spec}: {sorted(dims)}"
            )
    expected = 1
    for shard in shards:
        lines = shard.manifest.get("lines")
        if not (isinstance(lines, list) and len(lines) == 2 and lines[0] == expected and lines[1] >= lines[0]):
            raise ShardError(
                f"shard {shard.spec} ({shard.folder}) covers corpus lines {lines}, expected to start at line {expected}"
            )
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


def check_shard_contents(shards: list[Shard], report: Callable[[str], None] | None = None) -> None:
    """Read every shard to the end and check its passages, vectors and digests, and the ids of
    all shards together (see the module docstring); :class:`ShardError` naming the shard otherwise."""
    keys = array("Q")
    for shard in shards:
        keys.extend(_key(kind, value) for kind, value, _ in _ids(shard))
        if report:
            report(f"checked shard {shard.spec}: {shard.manifest['passages']:,} passages, their vectors and digests")
    suspects = _repeated(keys)
    if suspects:
        _raise_first_repeat(shards, suspects)


def document_of(passage: Document) -> str:
    """The document a passage was cut from (``meta.document_id``, else the passage itself)."""
    return _document(passage.id, passage.meta)


def _document(passage_id: str, meta: dict[str, Any]) -> str:
    source = meta.get("document_id")
    return source if isinstance(source, str) else passage_id


def _ids(shard: Shard) -> Iterator[tuple[str, str, int]]:
    """``("passage", id, line)`` for every passage, ``("document", id, line)`` where a document's passages begin."""
    previous = None
    for line, (fields, _) in enumerate(shard.records(), start=1):
        yield "passage", fields["id"], line
        document = _document(fields["id"], fields["meta"])
        if document != previous:
            yield "document", document, line
            previous = document


def _key(kind: str, value: str) -> int:
    return int.from_bytes(
        hashlib.blake2b(f"{kind}\0{value}".encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little"
    )


def _repeated(keys: array) -> set[int]:
    ordered = np.sort(np.frombuffer(keys, dtype=np.uint64)) if keys else np.zeros(0, dtype=np.uint64)
    return set(ordered[1:][ordered[1:] == ordered[:-1]].tolist())


def _raise_first_repeat(shards: list[Shard], suspects: set[int]) -> None:
    """Read the ids again and raise on the first one met twice (none: the digests merely collided)."""
    seen: dict[tuple[str, str], str] = {}
    for shard in shards:
        for kind, value, line in _ids(shard):
            if _key(kind, value) not in suspects:
                continue
            place = f"shard {shard.spec} ({PASSAGES} line {line})"
            first = seen.setdefault((kind, value), place)
            if first == place:
                continue
            if kind == "passage":
                raise ShardError(
                    f"passage id {value!r} comes twice, in {first} and in {place}: every passage id must be unique"
                )
            raise ShardError(
                f"the passages of document {value!r} are in two places, {first} and {place}: a document's passages "
                "must be consecutive in one shard (were the shards edited, or cut from a corpus with the document twice?)"
            )
