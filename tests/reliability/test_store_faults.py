"""Store faults: indexing killed (kill -9) at each step of a write, then the folder is opened
again and the same command re-run; leftovers of interrupted saves are cleaned up."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.commands import index_args
from tests.reliability.harness import (
    REPO,
    assert_success,
    cases,
    cli,
    cli_process,
    store_snapshot,
)
from tests.reliability.store_checks import (
    MORE_CORPUS,
    open_store,
    searches,
    write_corpus,
)

# (fault point, what is interrupted, whether the new documents were committed before the kill)
FAULT_POINTS = {
    "before commit": ("document_table.before_commit", False),
    "after the SQLite commit": ("store.after_commit", True),
    "mid FAISS save": ("dense_index.saving", True),
    "mid BM25 save": ("bm25_index.saving", True),
    "between the renames of the FAISS folder": ("atomic_directory.between_renames", True),
    "between the renames of the BM25 folder": ("atomic_directory.between_renames:2", True),
}


@pytest.fixture(scope="session")
def clean_build(_built_store: Path, tmp_path_factory: pytest.TempPathFactory, tiny_st_dir: Path) -> list:
    """Searches of a store built without faults: the small corpus, then three more documents."""
    folder = tmp_path_factory.mktemp("clean_build")
    store = Path(shutil.copytree(_built_store, folder / "store"))
    assert_success(cli(*index_args(write_corpus(folder / "more.jsonl", MORE_CORPUS), store, tiny_st_dir)))
    return searches(store)


def _leftovers(store: Path) -> list[str]:
    return sorted(p.name for p in store.iterdir() if p.name.endswith((".tmp", ".old")))


@cases("point, committed", FAULT_POINTS)
@pytest.mark.reliability(category="store faults", expect="nothing lost")
@pytest.mark.integration
def test_indexing_killed(
    indexed_store: Path,
    tmp_path: Path,
    tiny_st_dir: Path,
    clean_build: list,
    point: str,
    committed: bool,
    record_property: pytest.RecordProperty,
) -> None:
    """Indexing more documents into a store is killed with SIGKILL at one step of the write"""
    before = store_snapshot(indexed_store)
    args = index_args(write_corpus(tmp_path / "more.jsonl", MORE_CORPUS), indexed_store, tiny_st_dir)
    killed = cli_process(*args, env={"DPR_FAULT_POINT": point})
    assert killed.code == -9, f"the fault point was not reached (exit {killed.code}):\n{killed.err}"
    after = store_snapshot(indexed_store)  # opens the folder (and cleans up after the killed save)
    assert _leftovers(indexed_store) == []
    assert {i: after[i] for i in before} == before, "documents saved before the kill changed"
    assert len(after) == len(before) + (len(MORE_CORPUS) if committed else 0)
    if committed:
        assert searches(indexed_store) == clean_build
    assert_success(cli(*args))
    assert searches(indexed_store) == clean_build
    record_property(
        "documents before/after kill/after re-run", f"{len(before)}/{len(after)}/{len(store_snapshot(indexed_store))}"
    )
    record_property("same search results as a clean build", True)


def _assert_opened_as_before(store: Path, before: list[list[tuple[str, float]]]) -> None:
    """The first read opens ``store``'s folder: no temporary or set-aside folder is left after it, and the
    searches give what they gave ``before`` the damage."""
    open_store(store).count_documents()
    assert _leftovers(store) == []
    assert searches(store) == before


@pytest.mark.reliability(category="store faults", expect="nothing lost")
def test_stale_temporary_folders_are_removed_on_open(
    indexed_store: Path, record_property: pytest.RecordProperty
) -> None:
    """Opening a store whose folder holds temporary folders of saves killed long ago"""
    before = searches(indexed_store)
    (indexed_store / ".dense_index.k2j4h.tmp").mkdir()
    (indexed_store / ".dense_index.k2j4h.tmp" / "index.faiss").write_bytes(b"partial")
    (indexed_store / ".store_state.json.x1.tmp").write_text("{")
    shutil.copytree(indexed_store / "bm25_index", indexed_store / ".bm25_index.old")
    _assert_opened_as_before(indexed_store, before)
    record_property("same search results", True)


@pytest.mark.reliability(category="store faults", expect="nothing lost")
def test_old_folder_is_put_back_when_its_replacement_never_arrived(
    indexed_store: Path, record_property: pytest.RecordProperty
) -> None:
    """Opening a store killed after moving its BM25 folder aside and before moving the new one in"""
    before = searches(indexed_store)
    (indexed_store / "bm25_index").rename(indexed_store / ".bm25_index.old")
    _assert_opened_as_before(indexed_store, before)
    assert (indexed_store / "bm25_index" / "manifest.json").is_file()
    record_property("same search results", True)


@pytest.mark.timeout(60)
@pytest.mark.reliability(category="store faults", expect="nothing lost")
def test_temporary_folder_of_a_live_save_is_kept(indexed_store: Path) -> None:
    """Opening a store while another process holds its lock (saving) next to a temporary folder"""
    live = indexed_store / ".dense_index.live1.tmp"
    live.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); "
                "print('locked', flush=True); time.sleep(60)"
            ),
            str(indexed_store / "store.lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        store = open_store(indexed_store)
        assert store.count_documents() == 6  # the first read opens the folder
        assert live.is_dir(), "a live writer's temporary folder was deleted"
        del store
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    open_store(indexed_store).count_documents()
    assert not live.exists()
