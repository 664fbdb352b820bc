"""Sharded indexing: shard counts out of bounds, shard folders damaged after the run (even to the
same size), values no shard run writes, and merges killed midway."""

from __future__ import annotations

import json
import shutil
import struct
import time
from pathlib import Path

import pytest

from tests.helpers.corpora import SMALL_CORPUS
from tests.reliability.harness import (
    assert_clear_error,
    assert_success,
    cases,
    cli,
    cli_process,
    store_snapshot,
)
from tests.reliability.shard_checks import (
    edit_manifest,
    merge_args,
    rehash,
    shard_args,
    shard_folder,
)
from tests.reliability.store_checks import MORE_CORPUS, searches, write_corpus

SHARDS = pytest.mark.reliability(category="shards", expect="clear error")
FAST = 2.0  # seconds: the checks take milliseconds; the rest is slack for a busy machine


@pytest.fixture(scope="module")
def _shard_runs(tmp_path_factory: pytest.TempPathFactory, tiny_st_dir: Path) -> dict[str, Path]:
    """Two 2-way shard runs: the small corpus (its long document first, so both halves hold documents) and three more documents."""
    folder = tmp_path_factory.mktemp("shard_runs")
    runs = {}
    for name, records in (("small", list(reversed(SMALL_CORPUS))), ("more", MORE_CORPUS)):
        corpus = write_corpus(folder / f"{name}.jsonl", records)
        for spec in ("1/2", "2/2"):
            assert_success(cli(*shard_args(corpus, spec, folder / name, tiny_st_dir)))
        runs[name] = folder / name
    return runs


@pytest.fixture()
def shards(_shard_runs: dict[str, Path], tmp_path: Path) -> Path:
    """A private copy of the small corpus's two shards."""
    return Path(shutil.copytree(_shard_runs["small"], tmp_path / "shards"))


@pytest.fixture(params=["new store", "existing store"])
def target_store(request: pytest.FixtureRequest, indexed_store: Path, tmp_path: Path) -> Path:
    """The store a merge writes into: a new folder, or the small corpus's store (the ``existing store`` case)."""
    return indexed_store if request.param == "existing store" else tmp_path / "store"


@pytest.fixture()
def more_shards(_shard_runs: dict[str, Path], tmp_path: Path) -> Path:
    """A private copy of the two shards of three documents the small store lacks."""
    return Path(shutil.copytree(_shard_runs["more"], tmp_path / "more_shards"))


@pytest.fixture(scope="module")
def clean_merges(
    _shard_runs: dict[str, Path], _built_store: Path, tmp_path_factory: pytest.TempPathFactory, tiny_st_dir: Path
) -> dict[str, tuple]:
    """Contents and searches of merges without faults: into a new store, and into the small store."""
    folder = tmp_path_factory.mktemp("clean_merges")
    assert_success(cli(*merge_args(_shard_runs["small"], folder / "new", tiny_st_dir)))
    existing = Path(shutil.copytree(_built_store, folder / "existing"))
    assert_success(cli(*merge_args(_shard_runs["more"], existing, tiny_st_dir)))
    return {name: (store_snapshot(folder / name), searches(folder / name)) for name in ("new", "existing")}


def _timed(*args: object) -> tuple[object, float]:
    start = time.perf_counter()
    result = cli(*args)
    return result, time.perf_counter() - start


@SHARDS
@pytest.mark.parametrize("spec", ["1/30000000", "1/" + "9" * 5000], ids=["30M", "5000-digit"])
def test_shard_count_above_the_limit(
    tmp_path: Path, small_corpus_file: Path, tiny_st_dir: Path, spec: str, record_property: pytest.RecordProperty
) -> None:
    """Indexing shard 1 of 30 million (or of a 5,000-digit count), which used to hang or run out of memory"""
    result, seconds = _timed(*shard_args(small_corpus_file, spec, tmp_path / "shards", tiny_st_dir))
    assert_clear_error(result, "--shard", "at most 99,999 shards")
    assert seconds < FAST and not (tmp_path / "shards").exists()
    record_property("seconds to refuse", round(seconds, 3))


@SHARDS
def test_more_shards_than_corpus_lines(tmp_path: Path, small_corpus_file: Path, tiny_st_dir: Path) -> None:
    """Indexing shard 1 of 6 of a corpus of 5 lines"""
    result = cli(*shard_args(small_corpus_file, "1/6", tmp_path / "shards", tiny_st_dir))
    assert_clear_error(result, str(small_corpus_file), "has 5 lines, fewer than the 6 shards")
    assert not (tmp_path / "shards").exists()


@SHARDS
@pytest.mark.parametrize("beside_a_run", [False, True], ids=["alone", "beside-a-complete-run"])
def test_stray_folder_of_a_huge_count(
    shards: Path, tmp_path: Path, tiny_st_dir: Path, beside_a_run: bool, record_property: pytest.RecordProperty
) -> None:
    """Merging a shard folder holding a stray shard-00001-of-999999999 (the merge used to count to N for minutes)"""
    folder = shards if beside_a_run else tmp_path / "stray"
    (folder / "shard-00001-of-999999999").mkdir(parents=True)
    result, seconds = _timed(*merge_args(folder, tmp_path / "store", tiny_st_dir))
    assert_clear_error(result, "shard-00001-of-999999999: no run makes shard 1 of 999,999,999", "remove that folder")
    assert seconds < FAST and not (tmp_path / "store").exists()
    record_property("seconds to refuse", round(seconds, 3))


@SHARDS
def test_stray_shard_of_more_shards_than_corpus_lines(shards: Path, tmp_path: Path, tiny_st_dir: Path) -> None:
    """Merging a folder whose only shard, shard-00001-of-90000, says its corpus has 5 lines"""
    stray = tmp_path / "stray" / "shard-00001-of-90000"
    shutil.copytree(shard_folder(shards, 1, 2), stray)
    edit_manifest(stray, shard="1/90000")
    result, seconds = _timed(*merge_args(stray.parent, tmp_path / "store", tiny_st_dir))
    assert_clear_error(result, str(stray), "one of 90,000 shards", "corpus has 5 lines")
    assert seconds < FAST and not (tmp_path / "store").exists()


@SHARDS
def test_zeroed_vectors_of_the_same_size(shards: Path, tmp_path: Path, tiny_st_dir: Path) -> None:
    """Merging shards one of whose vector files was overwritten with zeros of the same size"""
    vectors = shard_folder(shards, 2, 2) / "vectors.f32"
    vectors.write_bytes(bytes(vectors.stat().st_size))
    result = cli(*merge_args(shards, tmp_path / "store", tiny_st_dir))
    # The values are checked as they stream, the digest at the end: the zeros are named first.
    assert_clear_error(result, "shard 2/2", "vectors.f32 row 1", "is all zeros", "run the shard again")
    assert not (tmp_path / "store").exists()


@SHARDS
def test_vectors_rewritten_to_the_same_size(shards: Path, tmp_path: Path, tiny_st_dir: Path) -> None:
    """Merging shards one of whose vector files was overwritten with other numbers of the same size"""
    vectors = shard_folder(shards, 2, 2) / "vectors.f32"
    vectors.write_bytes(struct.pack("<f", 0.5) * (vectors.stat().st_size // 4))
    result = cli(*merge_args(shards, tmp_path / "store", tiny_st_dir))
    assert_clear_error(result, "shard 2/2", "vectors.f32 is not the file the shard run wrote", "run the shard again")
    assert not (tmp_path / "store").exists()


@SHARDS
def test_passage_edited_to_the_same_length(shards: Path, tmp_path: Path, tiny_st_dir: Path) -> None:
    """Merging shards one of whose passages was edited in place, keeping the file's size"""
    passages = shard_folder(shards, 1, 2) / "passages.jsonl"
    text = passages.read_text(encoding="utf-8")
    assert "Jupiter is the largest" in text
    passages.write_text(text.replace("Jupiter is the largest", "Jupiter is the smalles", 1), encoding="utf-8")
    result = cli(*merge_args(shards, tmp_path / "store", tiny_st_dir))
    assert_clear_error(result, "shard 1/2", "passages.jsonl is not the file the shard run wrote")
    assert not (tmp_path / "store").exists()


@SHARDS
def test_non_finite_vector_refused_before_any_write(
    more_shards: Path, target_store: Path, tiny_st_dir: Path, record_property: pytest.RecordProperty
) -> None:
    """Merging shards whose last vector holds NaN, its manifest's digests matching (a faulty shard run)"""
    folder = shard_folder(more_shards, 2, 2)
    data = bytearray((folder / "vectors.f32").read_bytes())
    data[-4:] = struct.pack("<f", float("nan"))
    (folder / "vectors.f32").write_bytes(bytes(data))
    rehash(folder)
    store = target_store
    before = store_snapshot(store) if store.exists() else None
    result = cli(*merge_args(more_shards, store, tiny_st_dir))
    assert_clear_error(result, "shard 2/2", "vectors.f32 row", "NaN or infinite values")
    assert (store_snapshot(store) if store.exists() else None) == before, "the store changed"
    record_property("store after the refusal", "unchanged" if before else "absent")


@pytest.mark.reliability(category="shards", expect="nothing lost")
def test_zeroed_vectors_with_a_rewritten_digest(
    more_shards: Path, target_store: Path, tiny_st_dir: Path, record_property: pytest.RecordProperty
) -> None:
    """Merging shards one of whose vector files was overwritten with zeros and its manifest's digest rewritten to match"""
    folder = shard_folder(more_shards, 2, 2)
    vectors = folder / "vectors.f32"
    vectors.write_bytes(bytes(vectors.stat().st_size))
    rehash(folder)
    store = target_store
    before = (store_snapshot(store), searches(store)) if store.exists() else None
    result = cli(*merge_args(more_shards, store, tiny_st_dir))
    assert_clear_error(result, "shard 2/2", "vectors.f32 row 1", "is all zeros", "run the shard again")
    assert ((store_snapshot(store), searches(store)) if store.exists() else None) == before, "the store changed"
    record_property("store after the refusal", "unchanged" if before else "absent")


@SHARDS
def test_manifest_of_an_earlier_version(shards: Path, tmp_path: Path, tiny_st_dir: Path) -> None:
    """Merging shards written before manifests carried file digests"""
    folder = shard_folder(shards, 1, 2)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    edit_manifest(folder, format="dpr-components shard v1", files={k: v["bytes"] for k, v in manifest["files"].items()})
    result = cli(*merge_args(shards, tmp_path / "store", tiny_st_dir))
    assert_clear_error(result, str(folder), "earlier version", "run shard 1/2 again")
    assert not (tmp_path / "store").exists()


NEW_STORE_FAULTS = {
    "after the second batch's commit": "store.after_commit:2",
    "mid FAISS save": "dense_index.saving",
    "before the rename into place": "shard_merge.before_rename",
}


@cases("point", NEW_STORE_FAULTS)
@pytest.mark.reliability(category="shards", expect="nothing lost")
@pytest.mark.integration
def test_merge_into_a_new_store_killed(
    shards: Path,
    tmp_path: Path,
    tiny_st_dir: Path,
    clean_merges: dict,
    point: str,
    record_property: pytest.RecordProperty,
) -> None:
    """Merging shards into a new store is killed with SIGKILL midway, then run again"""
    store = tmp_path / "store"
    args = merge_args(shards, store, tiny_st_dir, "--batch-size", "1")
    killed = cli_process(*args, env={"DPR_FAULT_POINT": point})
    assert killed.code == -9, f"the fault point was not reached (exit {killed.code}):\n{killed.err}"
    assert not store.exists(), "a killed merge left a store"
    assert_success(cli(*args))
    assert (store_snapshot(store), searches(store)) == clean_merges["new"]
    assert not (tmp_path / ".store.merging").exists()
    record_property("store after the kill", "absent")
    record_property("same store as a clean merge after re-running", True)


@pytest.mark.reliability(category="shards", expect="nothing lost")
@pytest.mark.integration
def test_merge_into_an_existing_store_killed(
    more_shards: Path,
    indexed_store: Path,
    tiny_st_dir: Path,
    clean_merges: dict,
    record_property: pytest.RecordProperty,
) -> None:
    """Merging shards into an existing store is killed with SIGKILL after its second batch, then run again"""
    before = store_snapshot(indexed_store)
    args = merge_args(more_shards, indexed_store, tiny_st_dir, "--batch-size", "1")
    killed = cli_process(*args, env={"DPR_FAULT_POINT": "store.after_commit:2"})
    assert killed.code == -9, f"the fault point was not reached (exit {killed.code}):\n{killed.err}"
    after = store_snapshot(indexed_store)
    assert {i: after[i] for i in before} == before, "documents stored before the merge changed"
    assert len(after) == len(before) + 2  # the two batches written before the kill, whole
    assert_success(cli(*args))
    assert (store_snapshot(indexed_store), searches(indexed_store)) == clean_merges["existing"]
    record_property(
        "passages before/after the kill/after re-running",
        f"{len(before)}/{len(after)}/{len(store_snapshot(indexed_store))}",
    )
