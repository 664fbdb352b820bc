"""A folder of the user's documents indexed with ``haystack run index_files`` and kept in step with it: one file of
each kind in one command, searches by content and by ``meta.path``, files that cannot be converted named in one
line each, a second run that re-indexes only what changed, and a run killed with SIGKILL then run again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.helpers.commands import index_files_args
from tests.helpers.folder_documents import write_broken_pdf, write_mixed_folder, write_pdf
from tests.reliability.harness import PIPELINES, CliResult, assert_clear_error, assert_success, cli, cli_process

pytestmark = pytest.mark.usefixtures("one_thread")

RESULT = pytest.mark.reliability(category="folder of documents", expect="correct result")
ERROR = pytest.mark.reliability(category="folder of documents", expect="clear error")
LOST = pytest.mark.reliability(category="folder of documents", expect="nothing lost")


def _index(folder: Path, store: Path, model: Path, *extra: str) -> CliResult:
    return cli(*index_files_args(folder, store, model, *extra))


def _summary(result: CliResult) -> str:
    return result.out.strip().splitlines()[-1]


def _passages(store: Path) -> dict[str, tuple[str | None, dict[str, Any]]]:
    """Every passage: its text and meta (ids, texts and meta are what a run must reproduce)."""
    documents = EmbeddedDocumentStore(path=str(store), autosave=False).filter_documents()
    return {d.id: (d.content, d.meta) for d in documents}


def _search(store: Path, query: str, **inputs: Any) -> list[str]:
    extra = [arg for name, value in inputs.items() for arg in ("--input", f"{name}={json.dumps(value)}")]
    result = cli("run", PIPELINES / "bm25.yml", "--store", store, "-q", query, "--json", *extra)
    assert_success(result)
    return [d["id"] for d in json.loads(result.out)["bm25"]["documents"]]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder with one file of each kind and a PDF that is broken."""
    docs = tmp_path / "docs"
    docs.mkdir()
    write_mixed_folder(docs)
    write_broken_pdf(docs / "broken.pdf")
    return docs


@RESULT
def test_a_folder_with_each_kind_of_file_indexes_in_one_command(
    folder: Path, tmp_path: Path, tiny_st_dir: Path
) -> None:
    """haystack run index_files --input path=docs on a folder of .txt .md .html .pdf .docx .jsonl .tsv and a broken PDF"""
    store = tmp_path / "store"
    result = _index(folder, store, tiny_st_dir)
    assert_success(result)
    lines = (result.out + result.err).splitlines()
    broken = [line for line in lines if "broken.pdf" in line]
    assert len(broken) == 1 and broken[0].startswith("skipped broken.pdf: the PDF converter could not read it"), lines
    assert _summary(result) == f"{folder}: files 7 indexed, 0 unchanged, 0 removed, 1 skipped; 7 passages written"
    assert _search(store, "saffron spice crocus")[0] == "spice.docx#0"
    assert _search(store, "comet astronomers")[0] == "comet.pdf#0"
    assert _search(store, "Danube Vienna Budapest")[0] == "pages/river.html#0"
    assert _search(store, "Etna volcano Sicily")[0] == "faq.jsonl/q1#0"
    in_guide = {"field": "meta.path", "operator": "==", "value": "guide/intro.md"}
    assert _search(store, "lighthouse Hamlet koala", filters=in_guide) == ["guide/intro.md#0"]
    pdfs = {"field": "meta.file_type", "operator": "in", "value": ["pdf", "docx"]}
    assert sorted(_search(store, "comet saffron Hamlet", filters=pdfs)) == ["comet.pdf#0", "spice.docx#0"]
    meta = _passages(store)["comet.pdf#0"][1]
    assert meta["title"] == "Halley's Comet" and meta["file_type"] == "pdf" and meta["path"] == "comet.pdf"
    assert {"modified", "content_hash"} <= set(meta)


@RESULT
def test_a_second_run_after_editing_one_file_and_deleting_another(
    folder: Path, tmp_path: Path, tiny_st_dir: Path
) -> None:
    """haystack run index_files again after editing notes.txt and deleting faq.jsonl"""
    store = tmp_path / "store"
    assert_success(_index(folder, store, tiny_st_dir))
    before = _passages(store)
    (folder / "notes.txt").write_text("Ophelia drowns in a brook.", encoding="utf-8")
    (folder / "faq.jsonl").unlink()
    result = _index(folder, store, tiny_st_dir)
    assert_success(result)
    assert _summary(result) == f"{folder}: files 1 indexed, 5 unchanged, 1 removed, 1 skipped; 1 passage written"
    after = _passages(store)
    assert "faq.jsonl/q1#0" not in after and after["notes.txt#0"][0] == "Ophelia drowns in a brook."
    assert {k: v for k, v in after.items() if k != "notes.txt#0"} == {
        k: v for k, v in before.items() if k not in ("notes.txt#0", "faq.jsonl/q1#0")
    }
    assert _search(store, "Ophelia brook") == ["notes.txt#0"]
    assert _summary(_index(folder, store, tiny_st_dir)).endswith(
        "files 0 indexed, 6 unchanged, 0 removed, 1 skipped; 0 passages written"
    )


@RESULT
def test_a_renamed_file_moves_its_passages(folder: Path, tmp_path: Path, tiny_st_dir: Path) -> None:
    """haystack run index_files again after renaming notes.txt to hamlet.txt"""
    store = tmp_path / "store"
    assert_success(_index(folder, store, tiny_st_dir))
    (folder / "notes.txt").rename(folder / "hamlet.txt")
    result = _index(folder, store, tiny_st_dir)
    assert _summary(result).endswith("files 1 indexed, 6 unchanged, 1 removed, 1 skipped; 1 passage written")
    passages = _passages(store)
    assert "notes.txt#0" not in passages and passages["hamlet.txt#0"][1]["path"] == "hamlet.txt"


@RESULT
def test_keep_removed_keeps_the_passages_of_deleted_files(folder: Path, tmp_path: Path, tiny_st_dir: Path) -> None:
    """haystack run index_files --keep-removed after deleting a file"""
    store = tmp_path / "store"
    assert_success(_index(folder, store, tiny_st_dir))
    (folder / "notes.txt").unlink()
    result = _index(folder, store, tiny_st_dir, "--keep-removed")
    assert_success(result)
    assert "1 gone from the folder, passages kept" in _summary(result)
    assert "notes.txt#0" in _passages(store)
    assert "1 removed" in _summary(_index(folder, store, tiny_st_dir))
    assert "notes.txt#0" not in _passages(store)


@RESULT
def test_an_encrypted_pdf_and_a_binary_text_file_are_skipped_with_one_line_each(
    tmp_path: Path, tiny_st_dir: Path
) -> None:
    """haystack run index_files on a folder holding a password-protected PDF and a binary file named .txt"""
    docs = tmp_path / "docs"
    docs.mkdir()
    write_pdf(docs / "locked.pdf", ["confidential"], password="secret")
    (docs / "photo.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (docs / "ok.md").write_text("# Fine\n\nA readable note.", encoding="utf-8")
    (tmp_path / "outside.txt").write_text("not in the folder", encoding="utf-8")
    (docs / "link.txt").symlink_to(tmp_path / "outside.txt")
    result = _index(docs, tmp_path / "store", tiny_st_dir)
    assert_success(result)
    assert result.out.splitlines()[:3] == [
        "skipped link.txt: a symbolic link leading outside the folder, which is not followed",
        "skipped locked.pdf: the PDF is encrypted and cannot be read without its password (File has not been decrypted)",
        "skipped photo.txt: not text: it holds a NUL character (at byte 8), so it is binary data under a .txt name",
    ]
    assert "locked.pdf" not in result.err and "Traceback" not in result.err
    assert list(_passages(tmp_path / "store")) == ["ok.md#0"]


@RESULT
def test_a_malformed_corpus_file_in_the_folder_is_skipped_with_its_line(tmp_path: Path, tiny_st_dir: Path) -> None:
    """haystack run index_files --json on a folder whose data/faq.jsonl has invalid JSON on line 7"""
    docs = tmp_path / "docs"
    (docs / "data").mkdir(parents=True)
    good = "".join(json.dumps({"id": f"q{n}", "title": "Tides", "text": f"fact {n}"}) + "\n" for n in range(1, 7))
    bad = '{"id": "q7", "title": "Tides" "text": "The moon pulls the sea."}\n'
    (docs / "data" / "faq.jsonl").write_text(good + bad, encoding="utf-8")
    (docs / "readme.md").write_text("# Tides\n\nTwo tides a day.", encoding="utf-8")
    result = _index(docs, tmp_path / "store", tiny_st_dir, "--json")
    assert_success(result)
    summary = json.loads(result.out)
    assert summary["skipped"] == [
        {"path": "data/faq.jsonl", "reason": "data/faq.jsonl:7: invalid JSON (Expecting ',' delimiter at column 31)"}
    ]
    assert summary["indexed"] == ["readme.md"] and summary["documents_written"] == 1
    assert "faq.jsonl" not in result.err


@ERROR
def test_nothing_could_be_indexed(tmp_path: Path, tiny_st_dir: Path) -> None:
    """haystack run index_files on a folder whose only PDF is broken"""
    docs = tmp_path / "docs"
    docs.mkdir()
    write_broken_pdf(docs / "broken.pdf")
    result = _index(docs, tmp_path / "store", tiny_st_dir)
    assert_clear_error(result, f"no file of {docs} could be indexed")
    assert result.out.splitlines()[0].startswith("skipped broken.pdf: ")


@ERROR
@pytest.mark.parametrize("case", ["missing", "a file", "empty", "other kinds only"])
def test_a_folder_without_documents_is_refused_and_the_store_kept(
    case: str, folder: Path, tmp_path: Path, tiny_st_dir: Path
) -> None:
    """haystack run index_files --input path=X on a store, where X is missing, a file, empty or holds no document"""
    store = tmp_path / "store"
    assert_success(_index(folder, store, tiny_st_dir))
    before = _passages(store)
    target = tmp_path / "target"
    if case == "a file":
        target.write_text("{}", encoding="utf-8")
    elif case != "missing":
        target.mkdir()
        if case == "other kinds only":
            (target / "photo.png").write_bytes(b"\x89PNG")
    expected = {
        "missing": "does not exist",
        "a file": "is a file, not a folder",
        "empty": "holds no file to index",
        "other kinds only": "it holds only files of other kinds (.png 1)",
    }[case]
    assert_clear_error(_index(target, store, tiny_st_dir), str(target), expected)
    assert _passages(store) == before


def _many_files(folder: Path, count: int) -> None:
    folder.mkdir()
    for number in range(count):
        (folder / f"note{number:02d}.txt").write_text(f"note {number} about topic {number % 7}", encoding="utf-8")


@LOST
@pytest.mark.integration
@pytest.mark.parametrize(
    ("point", "change"),
    [("store.after_commit", "first run"), ("folder_run.after_removals", "edit, delete, rename")],
    ids=["after the first step's write", "after the removals of a second run"],
)
def test_a_run_killed_and_run_again_gives_the_store_of_one_run(
    point: str, change: str, tmp_path: Path, tiny_st_dir: Path
) -> None:
    """haystack run index_files killed with SIGKILL mid-run, then run again"""
    killed_folder, clean_folder = tmp_path / "killed", tmp_path / "clean"
    _many_files(killed_folder, 40)  # two steps of the run (32 files a step)
    killed_store, clean_store = tmp_path / "killed_store", tmp_path / "clean_store"
    args = ("--set", "embedder.progress_bar=false")
    if change != "first run":
        assert_success(_index(killed_folder, killed_store, tiny_st_dir))
        (killed_folder / "note03.txt").write_text("an edited note", encoding="utf-8")
        (killed_folder / "note04.txt").unlink()
        (killed_folder / "note05.txt").rename(killed_folder / "renamed.txt")
    shutil.copytree(killed_folder, clean_folder)  # the same files, modification times kept
    if change != "first run":
        shutil.copytree(killed_store, clean_store)
    killed = cli_process(
        *index_files_args(killed_folder, killed_store, tiny_st_dir, *args), env={"DPR_FAULT_POINT": point}
    )
    assert killed.code == -9, f"the fault point was not reached (exit {killed.code}):\n{killed.err}"
    # killed mid-run: the first step's 32 files written, or the edited, deleted and renamed files' passages removed
    assert len(_passages(killed_store)) == (32 if change == "first run" else 37)
    assert_success(_index(killed_folder, killed_store, tiny_st_dir))
    assert_success(_index(clean_folder, clean_store, tiny_st_dir))
    killed_passages, clean_passages = _passages(killed_store), _passages(clean_store)
    assert len(clean_passages) == (40 if change == "first run" else 39)
    assert killed_passages == clean_passages
