"""Folders the commands write: an export, a run, a shard folder, a cache or a store never replaces what it should not.

The table crosses each command that replaces a folder with each kind of existing folder; a refused
target must be left exactly as it was (its whole tree hashed before and after)."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.corpora import write_training_data
from tests.reliability.harness import PIPELINES, assert_clear_error, assert_success, cli
from tests.reliability.training_checks import train_args, train_command

ERROR = pytest.mark.reliability(category="output", expect="clear error")
RESULT = pytest.mark.reliability(category="output", expect="correct result")


def tree_digest(path: Path) -> str:
    """A digest of everything under ``path`` (names, kinds and bytes); a file's own bytes for a file."""
    digest = hashlib.sha256()
    if path.is_file():
        digest.update(path.read_bytes())
        return digest.hexdigest()
    for item in sorted(path.rglob("*")):
        if item.name.endswith("-shm"):  # SQLite's shared-memory index: any reader rewrites it, it holds no data
            continue
        digest.update(str(item.relative_to(path)).encode() + (b"/" if item.is_dir() else b":"))
        if item.is_file():
            digest.update(item.read_bytes())
    return digest.hexdigest()


def _run_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"config": {}, "data": "0"}), encoding="utf-8")
    (path / "log.jsonl").write_text('{"step": 0}\n', encoding="utf-8")
    (path / "checkpoints").mkdir()
    return path


def _shard_folder(path: Path) -> Path:
    (path / "shard-00001-of-00002").mkdir(parents=True)
    (path / "shard-00001-of-00002" / "manifest.json").write_text("{}", encoding="utf-8")
    return path


class Targets:
    """Builds the existing OUT folder of each case inside ``tmp_path``."""

    def __init__(self, tmp_path: Path, store: Path, reader: Path, st_model: Path) -> None:
        self.tmp, self.store, self.reader, self.st_model = tmp_path, store, reader, st_model

    def make(self, name: str, command: str, source: Path) -> Path:
        out = self.tmp / "out"
        if name == "new":
            return out
        if name == "empty":
            out.mkdir()
        elif name == "file":
            out.write_text("keep me", encoding="utf-8")
        elif name == "working folder":
            return Path(".")
        elif name == "store":
            return self.store
        elif name == "training run":
            _run_folder(out)
        elif name == "shard folder":
            _shard_folder(out)
        elif name == "other model kind":
            shutil.copytree(self.st_model if command == "export-qa" else self.reader, out)
        elif name == "own input":
            return source
        elif name == "own earlier output":
            assert_success(cli(command, source, out))
        return out


# (kind of existing OUT, with --overwrite, expected: "" for success or a fragment of the one error line)
CASES: list[tuple[str, bool, str]] = [
    ("new", False, ""),
    ("empty", False, ""),
    ("own earlier output", False, ""),
    ("file", False, "is a file, not a folder"),
    ("file", True, "is a file, not a folder"),
    ("working folder", False, "is the working folder"),
    ("working folder", True, "is the working folder"),
    ("store", False, "holds a document store; choose another folder or pass --overwrite"),
    ("training run", False, "holds a DPR training run; choose another folder or pass --overwrite"),
    ("shard folder", False, "holds a shard folder"),
    ("other model kind", False, "choose another folder or pass --overwrite"),
    ("own input", False, "holds this command's input"),
    ("own input", True, "holds this command's input"),
    ("store", True, ""),
    ("training run", True, ""),
    ("shard folder", True, ""),
    ("other model kind", True, ""),
]


def _params() -> list[object]:
    params = []
    for command in ("export-st", "export-qa"):
        for kind, overwrite, expected in CASES:
            mark = RESULT if not expected else ERROR
            name = f"{command}-{kind}{'-overwrite' if overwrite else ''}".replace(" ", "_")
            params.append(pytest.param(command, kind, overwrite, expected, marks=mark, id=name))
    return params


@pytest.mark.parametrize(("command", "kind", "overwrite", "expected"), _params())
def test_export_over_an_existing_folder(
    command: str,
    kind: str,
    overwrite: bool,
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    indexed_store: Path,
    tiny_reader_dir: Path,
    tiny_st_dir: Path,
) -> None:
    """haystack export-st / export-qa MODEL OUT where OUT already holds something (with and without --overwrite)"""
    monkeypatch.chdir(tmp_path)
    source = tmp_path / "source"
    shutil.copytree(tiny_st_dir if command == "export-st" else tiny_reader_dir, source)
    out = Targets(tmp_path, indexed_store, tiny_reader_dir, tiny_st_dir).make(kind, command, source)
    before = tree_digest(out) if out.exists() else None
    source_before = tree_digest(source)
    result = cli(command, source, out, *(["--overwrite"] if overwrite else []))
    if expected:
        assert_clear_error(result, expected)
        assert (tree_digest(out) if out.exists() else None) == before, "a refused target was changed"
    else:
        assert_success(result)
        assert _loads(command, out)
        assert not list(out.parent.glob(f".{out.name}.*")), "a temporary folder was left behind"
    assert tree_digest(source) == source_before, "the command's input was changed"


def _loads(command: str, out: Path) -> bool:
    """The export loads in the library it is meant for, its marker file beside the model's files."""
    if command == "export-st":
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(out), device="cpu").encode(["a question"]).shape[0] == 1
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    AutoTokenizer.from_pretrained(str(out))
    return AutoModelForQuestionAnswering.from_pretrained(str(out)) is not None


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        pytest.param(lambda p: (p.write_text("keep me"), p)[1], "is a file, not a folder", id="file"),
        pytest.param(_shard_folder, "holds a shard folder; choose another folder", id="shard-folder"),
    ],
)
@ERROR
def test_training_run_out_is_not_a_run(
    tmp_path: Path, tiny_bert_dir: Path, make: Callable[[Path], Path], fragment: str
) -> None:
    """python -m training.retriever.train --out naming an existing file or a folder of shards"""
    out = make(tmp_path / "out")
    before = tree_digest(out)
    data = write_training_data(tmp_path / "train.jsonl")
    assert_clear_error(train_command(train_args(data, out, tiny_bert_dir)), fragment)
    assert tree_digest(out) == before


def _index_args(corpus: Path, store: Path, *extra: object) -> list[object]:
    return ["run", PIPELINES / "index.yml", "--input", f"path={corpus}", "--store", store, *extra]


@ERROR
def test_cache_dir_is_a_file(tmp_path: Path, small_corpus_file: Path, tiny_st_dir: Path) -> None:
    """haystack run index.yml --set embedder.cache_dir=/dev/null"""
    extra = ["--set", f"embedder.model={tiny_st_dir}", "--set", "embedder.cache_dir=/dev/null"]
    result = cli(*_index_args(small_corpus_file, tmp_path / "store", *extra))
    assert_clear_error(result, "/dev/null is a file, not a folder")


@ERROR
def test_cache_dir_is_a_store(tmp_path: Path, small_corpus_file: Path, tiny_st_dir: Path, indexed_store: Path) -> None:
    """haystack run index.yml --set embedder.cache_dir=<a document store>"""
    before = tree_digest(indexed_store)
    extra = ["--set", f"embedder.model={tiny_st_dir}", "--set", f"embedder.cache_dir={indexed_store}"]
    result = cli(*_index_args(small_corpus_file, tmp_path / "store", *extra))
    assert_clear_error(result, "holds a document store; give a folder of its own for the cache")
    assert tree_digest(indexed_store) == before


@pytest.mark.parametrize("kind", ["file", "run"])
@ERROR
def test_store_path_is_not_a_store(tmp_path: Path, small_corpus_file: Path, tiny_st_dir: Path, kind: str) -> None:
    """haystack run index.yml --store naming a file or a training run"""
    store = tmp_path / "target"
    if kind == "file":
        store.write_text("keep me", encoding="utf-8")
    else:
        _run_folder(store)
    before = tree_digest(store)
    result = cli(*_index_args(small_corpus_file, store, "--set", f"embedder.model={tiny_st_dir}"))
    assert_clear_error(result, "is a file, not a folder" if kind == "file" else "holds a DPR training run")
    assert tree_digest(store) == before


@pytest.mark.parametrize("kind", ["file", "store"])
@ERROR
def test_shard_dir_is_not_a_shard_folder(
    tmp_path: Path, small_corpus_file: Path, indexed_store: Path, kind: str
) -> None:
    """haystack run index.yml --shard 1/2 --shard-dir naming a file or a document store"""
    shard_dir = tmp_path / "shards" if kind == "file" else indexed_store
    if kind == "file":
        shard_dir.write_text("keep me", encoding="utf-8")
    before = tree_digest(shard_dir)
    args = ["run", PIPELINES / "index.yml", "--input", f"path={small_corpus_file}", "--shard", "1/2"]
    result = cli(*args, "--shard-dir", shard_dir)
    assert_clear_error(result, "is a file, not a folder" if kind == "file" else "holds a document store")
    assert tree_digest(shard_dir) == before
