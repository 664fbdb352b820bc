"""What the shard cases share: shard runs and merges of ``pipelines/index.yml`` with the tiny encoder,
and a way to damage a shard while keeping its manifest's digests right (as a faulty shard run would)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from tests.reliability.harness import PIPELINES

ENCODER = ["--set", "embedder.cache_dir=null", "--set", "embedder.progress_bar=false"]


def shard_args(corpus: Path, spec: str, shard_dir: Path, model: Path) -> list[Any]:
    """``haystack run pipelines/index.yml --shard SPEC --shard-dir DIR`` arguments."""
    return [
        "run",
        PIPELINES / "index.yml",
        "--input",
        f"path={corpus}",
        "--shard",
        spec,
        "--shard-dir",
        shard_dir,
        "--set",
        f"embedder.model={model}",
        *ENCODER,
    ]


def merge_args(shard_dir: Path, store: Path, model: Path, *extra: str) -> list[Any]:
    """``haystack merge-shards pipelines/index.yml DIR --store STORE`` arguments."""
    return [
        "merge-shards",
        PIPELINES / "index.yml",
        shard_dir,
        "--store",
        store,
        "--set",
        f"embedder.model={model}",
        *ENCODER,
        *extra,
    ]


def shard_folder(shard_dir: Path, index: int, count: int) -> Path:
    return shard_dir / f"shard-{index:05d}-of-{count:05d}"


def rehash(folder: Path) -> None:
    """Record the current files of a shard in its manifest (sizes and SHA-256), as if the shard run had written them."""
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    for name, entry in manifest["files"].items():
        data = (folder / name).read_bytes()
        entry.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def edit_manifest(folder: Path, **changes: Any) -> None:
    path = folder / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text(encoding="utf-8")), **changes}, indent=2), encoding="utf-8")
