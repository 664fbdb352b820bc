"""A folder run of index_files.yml in this process: planned first, indexed in steps (one write each), a failing
step run again a file at a time, the summary; and the same pipeline run whole by Haystack."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from haystack import Pipeline

from dpr_components.index_runs import folder_run
from dpr_components.index_runs.folder_run import folder_to_index, run_folder, summary_lines
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.pipeline_requests.running import run_pipeline
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.helpers.folder_documents import write_broken_pdf, write_mixed_folder
from tests.helpers.paths import PIPELINES

pytestmark = pytest.mark.usefixtures("one_thread")


def _pipeline(store: Path, model: Path) -> Pipeline:
    sets = [f"embedder.model={model}", "embedder.cache_dir=null", "embedder.progress_bar=false"]
    return load_pipeline(PIPELINES / "index_files.yml", str(store), sets)


def _passages(store: Path) -> dict[str, tuple[str | None, dict[str, Any]]]:
    documents = EmbeddedDocumentStore(path=str(store)).filter_documents()
    return {d.id: (d.content, {k: v for k, v in d.meta.items() if k != "passage_encoder"}) for d in documents}


def test_only_a_folder_given_to_the_fetcher_is_run_by_folder(tmp_path: Path, tiny_st_dir: Path) -> None:
    pipeline = _pipeline(tmp_path / "store", tiny_st_dir)
    assert folder_to_index(pipeline, {"files": {"path": "docs"}}) == "docs"
    assert folder_to_index(pipeline, {"files": {"path": "docs", "files": ["a.txt"]}}) is None
    assert folder_to_index(load_pipeline(PIPELINES / "index.yml"), {"reader": {"path": "c.jsonl"}}) is None


def test_steps_hold_a_bounded_number_of_files_and_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(folder_run, "FILES_PER_STEP", 2)
    monkeypatch.setattr(folder_run, "BYTES_PER_STEP", 100)
    sizes = {"a": 10, "b": 10, "c": 10, "d": 95, "e": 200, "f": 1}
    assert list(folder_run._steps(list(sizes), sizes)) == [["a", "b"], ["c"], ["d"], ["e"], ["f"]]


def test_a_folder_run_in_steps_gives_the_store_of_one_haystack_run(
    tmp_path: Path, tiny_st_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    paths = write_mixed_folder(folder)
    write_broken_pdf(folder / "broken.pdf")
    monkeypatch.setattr(folder_run, "FILES_PER_STEP", 3)
    stepped = _pipeline(tmp_path / "stepped", tiny_st_dir)
    writes = []
    original = EmbeddedDocumentStore.write_documents

    def counted(store: EmbeddedDocumentStore, documents: list, *args: Any, **kwargs: Any) -> int:
        writes.append(sorted({d.meta["path"] for d in documents}))
        return original(store, documents, *args, **kwargs)

    monkeypatch.setattr(EmbeddedDocumentStore, "write_documents", counted)
    outcome = run_folder(stepped, str(folder), {"files": {"path": str(folder)}})
    assert outcome.indexed == paths and outcome.documents_written == 7
    assert [(s.path, s.reason.split(":")[0]) for s in outcome.skipped] == [
        ("broken.pdf", "the PDF converter could not read it")
    ]
    assert writes == [
        ["comet.pdf", "faq.jsonl"],
        ["guide/intro.md", "notes.txt", "pages/river.html"],
        ["psgs.tsv", "spice.docx"],
    ]
    assert (
        summary_lines(outcome)[-1]
        == f"{folder}: files 7 indexed, 0 unchanged, 0 removed, 1 skipped; 7 passages written"
    )

    whole = _pipeline(tmp_path / "whole", tiny_st_dir)
    result = run_pipeline(whole, {"path": str(folder)})
    assert result["writer"]["documents_written"] == 7
    assert [s["path"] for s in result["checker"]["skipped"]] == ["broken.pdf"]
    assert _passages(tmp_path / "whole") == _passages(tmp_path / "stepped")


def test_a_step_that_fails_is_run_again_a_file_at_a_time(tmp_path: Path, tiny_st_dir: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (folder / name).write_text(f"the text of {name}", encoding="utf-8")
    pipeline = _pipeline(tmp_path / "store", tiny_st_dir)

    def run(data: dict[str, Any], **options: Any) -> dict[str, Any]:
        if "b.txt" in data["files"]["files"]:
            raise ValueError("document 'b.txt' cannot be split")
        if "c.txt" in data["files"]["files"]:
            raise RuntimeError("a converter's bug")
        return run_pipeline(pipeline, data, **options)

    outcome = run_folder(pipeline, str(folder), {"files": {"path": str(folder)}}, run)
    assert outcome.indexed == ["a.txt"]
    assert [(s.path, s.reason) for s in outcome.skipped] == [
        ("b.txt", "document 'b.txt' cannot be split"),
        ("c.txt", "RuntimeError: a converter's bug"),
    ]
    assert not outcome.nothing_indexed


def test_a_failure_of_the_disk_stops_the_run(tmp_path: Path, tiny_st_dir: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("some text", encoding="utf-8")

    def run(data: dict[str, Any], **options: Any) -> dict[str, Any]:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        run_folder(_pipeline(tmp_path / "store", tiny_st_dir), str(folder), {"files": {"path": str(folder)}}, run)


def test_a_folder_without_any_file_to_index_removes_nothing(tmp_path: Path, tiny_st_dir: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("some text", encoding="utf-8")
    pipeline = _pipeline(tmp_path / "store", tiny_st_dir)
    run_folder(pipeline, str(folder), {"files": {"path": str(folder)}})
    (folder / "a.txt").unlink()
    (folder / "photo.png").write_bytes(b"\x89PNG")
    with pytest.raises(ValueError, match=r"holds no file to index .*only files of other kinds \(\.png 1\)"):
        run_folder(pipeline, str(folder), {"files": {"path": str(folder)}})
    assert list(_passages(tmp_path / "store")) == ["a.txt#0"]
    # the same pipeline run by Haystack in one piece keeps the store too
    with pytest.raises(ValueError, match="holds no file of a kind indexed"):
        run_pipeline(pipeline, {"path": str(folder)})
    assert list(_passages(tmp_path / "store")) == ["a.txt#0"]
