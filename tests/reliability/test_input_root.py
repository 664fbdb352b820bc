"""Files named by requests under an input root (``haystack serve``): only files inside it are read,
whatever a symlink points to between a check and the open; documents given as data are bounded."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dpr_components.utils.input_files import HARD_LINKS_ENV, INPUT_ROOT_ENV, open_input_file
from haystack_integrations.components.converters.dpr.corpus_reader import CorpusReader
from tests.reliability.harness import PIPELINES, assert_clear_error, cli

SECRET = "the secret passage outside the root"


@pytest.fixture()
def root_with_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """An input root holding a corpus and a symlink to it, a secret corpus outside, and the root set."""
    root = tmp_path / "served"
    root.mkdir()
    inside = root / "corpus.jsonl"
    inside.write_text(json.dumps({"id": "ok", "title": "Ok", "text": "an allowed passage"}) + "\n", encoding="utf-8")
    outside = tmp_path / "secret.jsonl"
    outside.write_text(json.dumps({"id": "secret", "title": "Secret", "text": SECRET}) + "\n", encoding="utf-8")
    link = root / "link.jsonl"
    link.symlink_to(inside)
    monkeypatch.setenv(INPUT_ROOT_ENV, str(root))
    return link, inside, outside


def _replace(path: Path, make: Callable[[Path], None]) -> None:
    """Put what ``make`` creates at ``path`` in one atomic rename, as an attacker writing in the root would."""
    temporary = path.with_name(path.name + ".new")
    if temporary.is_dir() and not temporary.is_symlink():
        shutil.rmtree(temporary)
    temporary.unlink(missing_ok=True)
    make(temporary)
    os.replace(temporary, path)


def _point(link: Path, target: Path) -> None:
    _replace(link, lambda temporary: temporary.symlink_to(target))


def _regular(path: Path, text: str) -> None:
    _replace(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


def _read_while(swap: Callable[[], None], read: Callable[[], str], seconds: float) -> dict[str, int]:
    """Read over and over for ``seconds`` while another thread runs ``swap`` in a loop; what was read."""
    stop = threading.Event()

    def swapping() -> None:
        while not stop.is_set():
            swap()

    swapper = threading.Thread(target=swapping, daemon=True)
    swapper.start()
    outcomes = {"read inside": 0, "refused": 0, "read outside": 0}
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline or sum(outcomes.values()) < 200:
            try:
                text = read()
            except ValueError as error:
                assert "symbolic link" in str(error) or "does not exist" in str(error), error
                outcomes["refused"] += 1
                continue
            outcomes["read outside" if SECRET in text else "read inside"] += 1
    finally:
        stop.set()
        swapper.join()
    return outcomes


def _read_corpus(path: Path) -> str:
    return " ".join(d.content or "" for d in CorpusReader().run(path=str(path))["documents"])


@pytest.mark.reliability(category="input root", expect="correct result")
def test_last_component_swapped_for_five_seconds(
    root_with_link: tuple[Path, Path, Path], record_property: pytest.RecordProperty
) -> None:
    """For 5 s a process writing in the input root swaps the corpus between a regular file and a symlink outside"""
    link, _, outside = root_with_link
    allowed = json.dumps({"id": "ok", "title": "Ok", "text": "an allowed passage"}) + "\n"

    def swap() -> None:
        _point(link, outside)
        _regular(link, allowed)

    outcomes = _read_while(swap, lambda: _read_corpus(link), seconds=5.0)
    assert outcomes["read outside"] == 0, outcomes
    assert outcomes["refused"] > 0 and outcomes["read inside"] > 0, outcomes  # the race was really run
    record_property("reads", f"{outcomes['read inside']} inside, {outcomes['refused']} refused, 0 outside")


@pytest.mark.reliability(category="input root", expect="correct result")
def test_folder_swapped_for_five_seconds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """For 5 s a process writing in the input root swaps a folder on the path for a symlink to a folder outside"""
    root, secret_folder = tmp_path / "served", tmp_path / "secret"
    root.mkdir()
    secret_folder.mkdir()
    (secret_folder / "corpus.jsonl").write_text(json.dumps({"id": "s", "text": SECRET}) + "\n", encoding="utf-8")
    allowed = json.dumps({"id": "ok", "text": "an allowed passage"}) + "\n"
    folder, aside = root / "data", root / "data.real"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(allowed, encoding="utf-8")
    link = root / "data.link"
    link.symlink_to(secret_folder, target_is_directory=True)
    monkeypatch.setenv(INPUT_ROOT_ENV, str(root))

    def swap() -> None:  # a folder cannot be renamed over a link or back: two renames each way
        os.rename(folder, aside)
        os.rename(link, folder)
        os.rename(folder, link)
        os.rename(aside, folder)

    outcomes = _read_while(swap, lambda: _read_corpus(folder / "corpus.jsonl"), seconds=5.0)
    assert outcomes["read outside"] == 0, outcomes
    assert outcomes["refused"] > 0 and outcomes["read inside"] > 0, outcomes


@dataclass
class OpenSteps:
    """The names :func:`open_input_file` opened, in order, and attacks to run just before a given name is opened."""

    opened: list[str] = field(default_factory=list)
    attacks: dict[str, Callable[[], None]] = field(default_factory=dict)


@pytest.fixture()
def steps(monkeypatch: pytest.MonkeyPatch) -> OpenSteps:
    """Makes the interleaving deterministic: each attack runs exactly between two steps of the library."""
    from dpr_components.utils import input_files

    recorded = OpenSteps()
    real_open = os.open

    def open_step(name: str, flags: int, *args: Any, **kwargs: Any) -> int:
        attack = recorded.attacks.pop(os.fspath(name), None)
        if attack is not None:
            attack()
        recorded.opened.append(os.fspath(name))
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(input_files.os, "open", open_step)
    return recorded


@pytest.mark.reliability(category="input root", expect="clear error")
def test_link_swapped_in_just_before_the_file_is_opened(
    root_with_link: tuple[Path, Path, Path], steps: OpenSteps
) -> None:
    """The corpus is a regular file when its folder is opened and a symlink outside when the file itself is opened"""
    link, _, outside = root_with_link
    _regular(link, "{}\n")
    steps.attacks["link.jsonl"] = lambda: _point(link, outside)
    with pytest.raises(ValueError, match=r"corpus file .* goes through a symbolic link, which is not followed"):
        open_input_file(link, "corpus file")
    assert steps.opened == [str(link.parent), "link.jsonl"] and not steps.attacks  # the root, then the swapped file


@pytest.mark.reliability(category="input root", expect="correct result")
def test_folder_swapped_after_it_was_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, steps: OpenSteps) -> None:
    """A folder on the path is renamed away and replaced by a symlink outside right after it was opened"""
    root, secret_folder = tmp_path / "served", tmp_path / "secret"
    (root / "data").mkdir(parents=True)
    secret_folder.mkdir()
    (root / "data" / "corpus.jsonl").write_text("allowed", encoding="utf-8")
    (secret_folder / "corpus.jsonl").write_text(SECRET, encoding="utf-8")
    monkeypatch.setenv(INPUT_ROOT_ENV, str(root))

    def attack() -> None:
        os.rename(root / "data", root / "moved")
        (root / "data").symlink_to(secret_folder, target_is_directory=True)

    steps.attacks["corpus.jsonl"] = attack  # after "data" was opened, before the file in it is
    with open_input_file(root / "data" / "corpus.jsonl", "corpus file") as handle:
        assert handle.read() == b"allowed"  # the folder that was opened, never the link's target
    assert steps.opened == [str(root), "data", "corpus.jsonl"] and not steps.attacks


@pytest.mark.reliability(category="input root", expect="clear error")
def test_hard_link_to_a_file_outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file in the input root is a hard link to a file outside it"""
    root, outside = tmp_path / "served", tmp_path / "secret.jsonl"
    root.mkdir()
    outside.write_text(json.dumps({"id": "s", "text": SECRET}) + "\n", encoding="utf-8")
    os.link(outside, root / "corpus.jsonl")
    monkeypatch.setenv(INPUT_ROOT_ENV, str(root))
    with pytest.raises(ValueError, match=f"has 2 hard links .*{HARD_LINKS_ENV}=allow"):
        CorpusReader().run(path=str(root / "corpus.jsonl"))
    monkeypatch.setenv(HARD_LINKS_ENV, "allow")  # a server whose root only trusted users write to
    assert SECRET in _read_corpus(root / "corpus.jsonl")


@pytest.mark.reliability(category="input root", expect="clear error")
@pytest.mark.parametrize("kind", ["fifo", "folder", "dot-dot", "the root", "inner symlink"])
def test_paths_that_are_not_plain_files_inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """A request names a FIFO, a folder, a path with '..', the root itself or a symlink to a file inside"""
    root = tmp_path / "served"
    (root / "sub").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("{}\n", encoding="utf-8")
    (root / "inner.jsonl").symlink_to(root / "corpus.jsonl")
    os.mkfifo(root / "pipe")
    monkeypatch.setenv(INPUT_ROOT_ENV, str(root))
    path, message = {
        "fifo": (root / "pipe", "is not a regular file"),
        "folder": (root / "sub", "is not a regular file"),
        "dot-dot": (root / "sub" / ".." / "corpus.jsonl", "contains '..'"),
        "the root": (root, "is the root folder itself"),
        "inner symlink": (root / "inner.jsonl", "goes through a symbolic link"),
    }[kind]
    with pytest.raises(ValueError, match=message):  # at once: a FIFO nobody writes to does not hang the reader
        open_input_file(path, "corpus file")


@pytest.mark.reliability(category="input root", expect="clear error")
def test_record_of_10_mb(indexed_store: Path, tiny_st_dir: Path, tmp_path: Path) -> None:
    """An index request whose one record holds 10 MB of text"""
    inputs = tmp_path / "inputs.json"
    inputs.write_text(
        json.dumps({"records": [{"id": "big", "title": "Big", "text": "word " * 2_000_000}]}), encoding="utf-8"
    )
    started = time.monotonic()
    result = cli(
        "run",
        PIPELINES / "index.yml",
        "--inputs-file",
        inputs,
        "--store",
        indexed_store,
        "--set",
        f"embedder.model={tiny_st_dir}",
        "--set",
        "embedder.cache_dir=null",
    )
    assert_clear_error(result, "records[0]: document 'big' has 10,000,006 bytes of text; the limit is 8,388,608")
    assert time.monotonic() - started < 30  # refused before any encoding


@pytest.mark.reliability(category="input root", expect="clear error")
def test_record_with_a_lone_surrogate(tmp_path: Path) -> None:
    """An index request whose record text holds a broken \\u escape (a lone surrogate)"""
    with pytest.raises(ValueError, match=r"records\[0\]: document 'a' has in field 'text' a lone surrogate U\+D800"):
        CorpusReader().run(records=json.loads('[{"id": "a", "text": "broken \\ud800 escape"}]'))


@pytest.mark.reliability(category="input root", expect="clear error")
def test_training_data_read_through_a_link_outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Training data named through a symlink in the input root that points outside (every open is checked)"""
    from dpr_components.dpr_data.loading import load_training_examples

    root, outside = tmp_path / "served", tmp_path / "secret.jsonl"
    root.mkdir()
    outside.write_text(
        json.dumps({"question": "q", "answers": ["a"], "positive_ctxs": [{"title": "t", "text": SECRET}]}) + "\n"
    )
    (root / "train.jsonl").symlink_to(outside)
    assert load_training_examples(root / "train.jsonl").examples  # no root: the command line reads any file
    monkeypatch.setenv(INPUT_ROOT_ENV, str(root))
    with pytest.raises(ValueError, match=r"training data file .* goes through a symbolic link"):
        load_training_examples(root / "train.jsonl")
    (root / "folder").mkdir()
    with pytest.raises(ValueError, match="must be a JSON or JSON lines file inside it"):
        load_training_examples(root / "folder")


@pytest.mark.reliability(category="input root", expect="correct result")
def test_served_index_requests_while_the_corpus_is_swapped(
    tmp_path: Path,
    indexed_store: Path,
    tiny_st_dir: Path,
    tiny_reader_dir: Path,
    tiny_bert_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    record_property: pytest.RecordProperty,
) -> None:
    """For 5 s haystack serve gets index requests for a corpus that another process swaps with a symlink outside"""
    from starlette.testclient import TestClient

    from dpr_components.serving.app import build_app
    from dpr_components.serving.security import ServerPolicy
    from tests.helpers.serving import write_pipelines

    store, root = indexed_store, tmp_path / "served"  # a private copy
    root.mkdir()
    outside = tmp_path / "secret.jsonl"
    outside.write_text(json.dumps({"id": "secret", "text": SECRET}) + "\n", encoding="utf-8")
    corpus = root / "corpus.jsonl"
    allowed = json.dumps({"id": "ok", "text": "an allowed passage"}) + "\n"
    _regular(corpus, allowed)
    monkeypatch.setenv(INPUT_ROOT_ENV, str(root))
    write_pipelines(tmp_path / "pipelines", store, tiny_st_dir, tiny_reader_dir, tiny_bert_dir, tmp_path / "run")
    app, _ = build_app(tmp_path / "pipelines", policy=ServerPolicy())
    client = TestClient(app, base_url="http://127.0.0.1:1416", raise_server_exceptions=False)
    answers: dict[int, int] = {}

    def index() -> str:
        response = client.post("/index/run", json={"path": str(corpus)})
        answers[response.status_code] = answers.get(response.status_code, 0) + 1
        if response.status_code != 200:
            detail = response.json()["detail"]
            assert response.status_code == 400 and "\n" not in detail, response.text
            raise ValueError(detail)
        return ""

    def swap() -> None:
        _point(corpus, outside)
        _regular(corpus, allowed)

    outcomes = _read_while(swap, index, seconds=5.0)
    found = client.post("/bm25/run", json={"query": SECRET, "top_k": 50}).json()["result"]["documents"]
    assert all(document["id"] != "secret" for document in found), found
    assert set(answers) == {200, 400} and outcomes["refused"] == answers[400], answers
    record_property("requests", f"{answers[200]} indexed inside, {answers[400]} refused with their cause, 0 outside")
