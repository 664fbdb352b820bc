"""benchmarks/files/folder_indexing.py: a whole run on a tiny random encoder over a folder made from a few
records (both systems storing the same passages, ours finding every file unchanged the second time, the page
rendered again from its JSON), the mixed folder itself, and a missing pool named."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from benchmarks.files.folder_indexing import main, rates
from benchmarks.files.mixed_folder import KINDS, write_mixed_folder
from dpr_components.packaged import packaged_pipeline_path

pytest.importorskip("haystack_integrations.components.embedders.sentence_transformers")
pytest.importorskip("pypdf")
pytest.importorskip("docx")

WORDS = "the river flows past old stone bridges and quiet fields where farmers grow wheat and barley".split()
RECORDS = [
    {"id": f"d{number}", "title": f"Topic {number}", "text": " ".join((WORDS[number:] + WORDS[:number]) * 2),
     "source": "dpr-wiki"}
    for number in range(6)
]  # fmt: skip
ARTICLE = {"id": "a1", "title": "Whole article", "text": "an entire article nobody splits " * 5, "source": "nq-article"}


def write_corpus(path: Path) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in [ARTICLE, *RECORDS]), encoding="utf-8")
    return path


def tiny_pipelines(folder: Path, encoder: Path) -> Path:
    """index_files.yml with the tiny encoder on torch (choosing a back end for a tiny model costs seconds)."""
    folder.mkdir()
    spec = yaml.safe_load(packaged_pipeline_path("index_files").read_text(encoding="utf-8"))
    spec["components"]["embedder"]["init_parameters"].update(model=str(encoder), backend="torch")
    (folder / "index_files.yml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return folder


def test_a_run_on_a_tiny_encoder(tmp_path: Path, tiny_st_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPR_CACHE_DIR", str(tmp_path / "cache"))  # the work folder and the workers' logs
    out, corpus = tmp_path / "report", write_corpus(tmp_path / "corpus.jsonl")
    pipelines = tiny_pipelines(tmp_path / "pipelines", tiny_st_dir)
    options = ["--files", "10", "--repeats", "1", "--threads", "1", "--corpus", str(corpus)]
    main([*options, "--pipelines", str(pipelines), "--out", str(out)])
    summary = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert summary["folder"]["per_kind"] == dict.fromkeys(KINDS, 2) and summary["folder"]["words"] > 0
    runs = summary["runs"]
    assert list(runs) == ["ours", "ours_unchanged", "haystack"]
    (ours,), (again,), (theirs,) = runs["ours"], runs["ours_unchanged"], runs["haystack"]
    assert ours["files_indexed"] == theirs["files_indexed"] == 10
    assert ours["passages"] == ours["passages_written"] == theirs["passages"] == theirs["passages_written"] > 10
    assert again["files_unchanged"] == 10 and again["passages_written"] == 0 and again["passages"] == ours["passages"]
    for name in runs:
        assert all(rate > 0 for rate in rates(runs[name])["files"]) and runs[name][0]["peak_mib"] > 0
    markdown = out.with_suffix(".md").read_text(encoding="utf-8")
    assert markdown.startswith("# Folder indexing: index_files against Haystack's converters\n")
    assert "python -m benchmarks.files.folder_indexing --files 10" in markdown
    assert "| **ours ÷ Haystack** (median rates) |" in markdown
    out.with_suffix(".md").unlink()
    main(["--out", str(out), "--from-json"])
    assert out.with_suffix(".md").read_text(encoding="utf-8") == markdown


def test_the_folder_has_every_kind_in_turn_and_no_whole_article(tmp_path: Path) -> None:
    written = write_mixed_folder(tmp_path / "folder", write_corpus(tmp_path / "corpus.jsonl"), 7, 4)
    assert written["per_kind"] == {".txt": 2, ".md": 2, ".html": 1, ".pdf": 1, ".docx": 1}
    assert written["corpus_rows"] == len(RECORDS) and written["words"] == 7 * 4 * 2 * len(WORDS)
    names = sorted(path.name for path in (tmp_path / "folder").iterdir())
    assert names[:2] == ["0000 Topic 0.txt", "0001 Topic 4.md"]
    markdown = (tmp_path / "folder" / "0001 Topic 4.md").read_text(encoding="utf-8")
    assert markdown.startswith("# Topic 4\n\n") and "article" not in markdown


def test_a_missing_pool_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPR_DATA_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(SystemExit, match=re.escape("nowhere/wiki/documents.jsonl is missing")):
        main(["--files", "5", "--out", str(tmp_path / "report")])
