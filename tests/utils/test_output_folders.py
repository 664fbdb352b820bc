"""The rule for folders a command writes: what an existing folder holds, and whether a command may write it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from dpr_components.utils.output_folders import (
    DPR_RUN,
    EMBEDDING_CACHE,
    EMPTY,
    ENCODER_PAIR,
    MARKER,
    MODEL,
    OTHER,
    QA_MODEL,
    READER,
    READER_RUN,
    REPORT,
    SENTENCE_TRANSFORMERS,
    SHARDS,
    STORE,
    OutputFolderError,
    check_output_folder,
    check_report_folder,
    claim_folder,
    folder_kind,
    read_marker,
    write_marker,
)


def _files(folder: Path, *names: str, config: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = folder / name
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x", encoding="utf-8")
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


KINDS: list[tuple[str, Callable[[Path], Path]]] = [
    (EMPTY, _files),
    (STORE, lambda p: _files(p, "documents.sqlite", "dense_index/", "bm25_index/", "store.lock")),
    (STORE, lambda p: _files(p, "dense_index/", "store.lock")),
    (DPR_RUN, lambda p: _files(p, "log.jsonl", "checkpoints/", "final/", config={"config": {}, "data": "x"})),
    (DPR_RUN, lambda p: _files(p, config={"config": {}, "data": "x"})),
    (READER_RUN, lambda p: _files(p, "log.jsonl", "checkpoint/", "best/", "command.txt")),
    (SHARDS, lambda p: _files(p, "shard-00001-of-00002/", "shard-00002-of-00002/", ".shard-x.tmp/")),
    (SHARDS, lambda p: _files(p, "manifest.json", "passages.jsonl", "vectors.f32")),
    (ENCODER_PAIR, lambda p: _files(p, "question_encoder/", "passage_encoder/", "training.json")),
    (SENTENCE_TRANSFORMERS, lambda p: _files(p, "modules.json", "1_Pooling/", config={"architectures": ["BertModel"]})),
    (READER, lambda p: _files(p, "reader_info.json", "model.safetensors", config={"architectures": ["DPRReader"]})),
    (QA_MODEL, lambda p: _files(p, "model.safetensors", config={"architectures": ["BertForQuestionAnswering"]})),
    (MODEL, lambda p: _files(p, "model.safetensors", config={"architectures": ["BertModel"]})),
    (REPORT, lambda p: _files(p, "report.json", "report.md", "topk_accuracy.png")),
    (EMBEDDING_CACHE, lambda p: _files(p, "0123abcd.sqlite", "0123abcd.sqlite-wal", "ffee.sqlite.damaged")),
    (OTHER, lambda p: _files(p, "notes.txt")),
    (OTHER, lambda p: _files(p, ".git/")),
]


@pytest.mark.parametrize(("kind", "make"), KINDS, ids=[f"{k}-{i}" for i, (k, _) in enumerate(KINDS)])
def test_folder_kind_recognises_what_a_folder_holds(tmp_path: Path, kind: str, make: Callable[[Path], Path]) -> None:
    assert folder_kind(make(tmp_path / "out")) == kind


def test_folder_kind_of_nothing_and_the_marker_first(tmp_path: Path) -> None:
    assert folder_kind(tmp_path / "missing") is None
    folder = _files(tmp_path / "export", "modules.json")
    write_marker(folder, QA_MODEL)
    assert read_marker(folder) == QA_MODEL and folder_kind(folder) == QA_MODEL
    (folder / MARKER).write_text("{not json", encoding="utf-8")
    assert read_marker(folder) is None and folder_kind(folder) == SENTENCE_TRANSFORMERS


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"/" for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize(("kind", "make"), [k for k in KINDS if k[0] not in (EMPTY, SENTENCE_TRANSFORMERS)])
def test_a_replacement_refuses_every_other_kind(tmp_path: Path, kind: str, make: Callable[[Path], Path]) -> None:
    folder = make(tmp_path / "out")
    before = _tree(folder)
    with pytest.raises(OutputFolderError, match="choose another folder or pass --overwrite"):
        check_output_folder(folder, SENTENCE_TRANSFORMERS)
    assert _tree(folder) == before
    assert check_output_folder(folder, SENTENCE_TRANSFORMERS, overwrite=True) == folder


def test_a_replacement_takes_a_new_or_empty_folder_or_its_own_output(tmp_path: Path) -> None:
    assert check_output_folder(tmp_path / "new" / "out", MODEL) == tmp_path / "new" / "out"
    assert check_output_folder(_files(tmp_path / "empty"), MODEL) == tmp_path / "empty"
    own = _files(tmp_path / "own", "modules.json")
    write_marker(own, SENTENCE_TRANSFORMERS)
    assert check_output_folder(own, SENTENCE_TRANSFORMERS) == own
    with pytest.raises(OutputFolderError, match="holds a sentence-transformers model; choose another"):
        check_output_folder(own, QA_MODEL)


def test_same_kind_without_a_marker_is_replaced_only_with_overwrite(tmp_path: Path) -> None:
    folder = _files(tmp_path / "st", "modules.json")
    with pytest.raises(OutputFolderError, match="holds a sentence-transformers model that this command did not write"):
        check_output_folder(folder, SENTENCE_TRANSFORMERS)
    check_output_folder(folder, SENTENCE_TRANSFORMERS, overwrite=True)


def test_an_update_accepts_a_folder_of_its_kind_without_a_marker(tmp_path: Path) -> None:
    run = _files(tmp_path / "run", "log.jsonl", "checkpoints/", config={"config": {}, "data": "x"})
    assert check_output_folder(run, DPR_RUN, replace=False) == run
    with pytest.raises(OutputFolderError, match=f"{run} holds a DPR training run; choose another folder$"):
        check_output_folder(run, READER_RUN, replace=False, hint="choose another folder")


@pytest.mark.parametrize("overwrite", [False, True])
def test_files_the_working_folder_and_inputs_are_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overwrite: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    file = tmp_path / "file.txt"
    file.write_text("keep", encoding="utf-8")
    pair = _files(tmp_path / "runs" / "x" / "final", "question_encoder/config.json", "passage_encoder/config.json")
    cases = [
        (file, [], "is a file, not a folder"),
        (Path("."), [], "is the working folder or contains it"),
        (tmp_path.parent, [], "is the working folder or contains it"),
        (Path("/"), [], "is the working folder or contains it"),
        (pair, [pair], "holds this command's input"),
        (tmp_path / "runs" / "x", [pair / "question_encoder"], "holds this command's input"),
        (pair / "question_encoder" / "st", [pair], "is inside this command's input"),
    ]
    for path, inputs, message in cases:
        before = _tree(tmp_path)
        with pytest.raises(OutputFolderError, match=message):
            check_output_folder(path, SENTENCE_TRANSFORMERS, inputs=inputs, overwrite=overwrite)
        assert _tree(tmp_path) == before
    with pytest.raises(OutputFolderError, match="is a file"):
        check_output_folder(file, STORE, replace=False)
    with pytest.raises(OutputFolderError, match="is a file"):
        check_output_folder("/dev/null", EMBEDDING_CACHE, replace=False)


def test_an_input_that_does_not_exist_is_no_obstacle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert check_output_folder("out", MODEL, inputs=["bundled:all-MiniLM-L6-v2", ""]) == Path("out")


def test_claim_folder_marks_a_new_run_and_keeps_a_resumed_one(tmp_path: Path) -> None:
    run = claim_folder(tmp_path / "run", READER_RUN)
    assert read_marker(run) == READER_RUN
    (run / "log.jsonl").write_text("{}\n", encoding="utf-8")
    assert claim_folder(run, READER_RUN) == run
    with pytest.raises(OutputFolderError, match="holds a reader training run"):
        claim_folder(run, DPR_RUN)
    store = _files(tmp_path / "store", "documents.sqlite")
    with pytest.raises(OutputFolderError, match="holds a document store"):
        claim_folder(store, DPR_RUN)
    assert not (store / MARKER).exists()


def test_report_folders_refuse_files_and_other_kinds_only(tmp_path: Path) -> None:
    assert check_report_folder(_files(tmp_path / "notes", "notes.txt")) == tmp_path / "notes"
    assert check_report_folder(_files(tmp_path / "old", "report.json")) == tmp_path / "old"
    with pytest.raises(OutputFolderError, match=r"--out .* holds a document store"):
        check_report_folder(_files(tmp_path / "store", "documents.sqlite"))
    (tmp_path / "file").write_text("", encoding="utf-8")
    with pytest.raises(OutputFolderError, match="is a file"):
        check_report_folder(tmp_path / "file")


def test_what_a_concurrent_writer_leaves_for_a_moment_is_not_content(tmp_path: Path) -> None:
    """A DDP rank or a shard worker sees the temporary files of another's atomic write: still an empty folder;
    any other hidden entry (a repository's .git) is content."""
    from dpr_components.utils.output_folders import EMPTY, OTHER, folder_kind

    transient = tmp_path / "transient"
    transient.mkdir()
    for name in (".config.json.k2j4.tmp", ".shard-00001-of-00002.old", ".store.merge.lock", ".store.merging"):
        (transient / name).write_text("")
    assert folder_kind(transient) == EMPTY
    (transient / ".git").mkdir()
    assert folder_kind(transient) == OTHER
