"""Files named by requests under an input root (``haystack serve``): only files inside it are read,
whatever a symlink points to between a check and the open; documents given as data are bounded."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from dpr_components.indexing.components import CorpusReader
from dpr_components.utils.input_files import INPUT_ROOT_ENV, open_input_file
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


def _point(link: Path, target: Path) -> None:
    """Swap what ``link`` points to in one atomic rename, as an attacker writing in the root would."""
    temporary = link.with_name(link.name + ".new")
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(target)
    os.replace(temporary, link)


@pytest.mark.reliability(category="input root", expect="correct result")
def test_symlink_swapped_during_reads(
    root_with_link: tuple[Path, Path, Path], record_property: pytest.RecordProperty
) -> None:
    """A process writing in the input root swaps a symlink between a file inside and a file outside while the corpus is read"""
    link, inside, outside = root_with_link
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            _point(link, outside)
            _point(link, inside)

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    outcomes = {"read inside": 0, "refused": 0}
    deadline = time.monotonic() + 3.0
    try:
        while time.monotonic() < deadline or sum(outcomes.values()) < 200:
            try:
                documents = CorpusReader().run(path=str(link))["documents"]
            except ValueError as error:
                assert "outside the input root" in str(error) or "does not exist" in str(error), error
                outcomes["refused"] += 1
                continue
            assert [d.content for d in documents] == ["an allowed passage"], documents
            outcomes["read inside"] += 1
    finally:
        stop.set()
        swapper.join()
    assert outcomes["refused"] > 0 and outcomes["read inside"] > 0, outcomes  # the race was really run
    record_property("reads", f"{outcomes['read inside']} inside, {outcomes['refused']} refused, 0 outside")


@pytest.mark.reliability(category="input root", expect="clear error")
def test_symlink_swapped_between_open_and_check(
    root_with_link: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The symlink points outside when the file is opened and inside again when its path is resolved"""
    import dpr_components.utils.input_files as input_files

    link, inside, outside = root_with_link
    _point(link, outside)  # what open() follows
    realpath = os.path.realpath
    # What a check by name would see after the swap back: the file inside.
    monkeypatch.setattr(
        input_files.os.path, "realpath", lambda p: str(inside) if os.fspath(p) == str(link) else realpath(p)
    )
    with pytest.raises(ValueError, match="corpus file .* is outside the input root"):
        open_input_file(link, "corpus file")


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
    from dpr_components.training.data import load_training_examples

    root, outside = tmp_path / "served", tmp_path / "secret.jsonl"
    root.mkdir()
    outside.write_text(
        json.dumps({"question": "q", "answers": ["a"], "positive_ctxs": [{"title": "t", "text": SECRET}]}) + "\n"
    )
    (root / "train.jsonl").symlink_to(outside)
    assert load_training_examples(root / "train.jsonl").examples  # no root: the command line reads any file
    monkeypatch.setenv(INPUT_ROOT_ENV, str(root))
    with pytest.raises(ValueError, match="training data file .* is outside the input root"):
        load_training_examples(root / "train.jsonl")
    (root / "folder").mkdir()
    with pytest.raises(ValueError, match="must be a JSON or JSON lines file inside it"):
        load_training_examples(root / "folder")
