"""Corpus files given to ``haystack run pipelines/index.yml``: empty, unreadable, malformed or hostile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.commands import index_args
from tests.reliability.harness import assert_clear_error, assert_success, cli

CORPUS = pytest.mark.reliability(category="corpus files", expect="clear error")


def index(corpus: Path, store: Path, model: Path, *extra: str):  # returns a CliResult
    return cli(*index_args(corpus, store, model, *extra))


def _jsonl(tmp_path: Path, *documents: dict, name: str = "corpus.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    return path


@CORPUS
@pytest.mark.parametrize("content", ["", "\n  \n\t\n\u3000\n"], ids=["empty", "blank-lines"])
def test_corpus_without_documents(tmp_path: Path, tiny_st_dir: Path, content: str) -> None:
    """An empty corpus file, or one of blank lines only (it used to index 0 documents and succeed)"""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(content, encoding="utf-8")
    assert_clear_error(index(corpus, tmp_path / "store", tiny_st_dir), str(corpus), "the corpus holds no documents")


@CORPUS
def test_tsv_with_header_only(tmp_path: Path, tiny_st_dir: Path) -> None:
    """A DPR-style TSV corpus with its header and no rows"""
    corpus = tmp_path / "psgs.tsv"
    corpus.write_text("id\ttext\ttitle\n", encoding="utf-8")
    assert_clear_error(index(corpus, tmp_path / "store", tiny_st_dir), "the corpus holds no documents")


@CORPUS
def test_all_documents_skipped_as_empty(tmp_path: Path, tiny_st_dir: Path) -> None:
    """on_empty=skip with a corpus whose every text is blank"""
    corpus = _jsonl(tmp_path, {"id": "a", "text": " "}, {"id": "b", "text": ""})
    result = index(corpus, tmp_path / "store", tiny_st_dir, "--set", "reader.on_empty=skip")
    assert_clear_error(result, "none of the 2 documents has text")


@CORPUS
def test_directory_as_corpus(tmp_path: Path, tiny_st_dir: Path) -> None:
    """A directory given as the corpus file"""
    folder = tmp_path / "corpus.jsonl"
    folder.mkdir()
    assert_clear_error(index(folder, tmp_path / "store", tiny_st_dir), str(folder), "is a directory")


@CORPUS
def test_missing_corpus(tmp_path: Path, tiny_st_dir: Path) -> None:
    """A corpus path that does not exist"""
    assert_clear_error(index(tmp_path / "nope.jsonl", tmp_path / "store", tiny_st_dir), "does not exist")


@CORPUS
def test_corpus_not_utf8(tmp_path: Path, tiny_st_dir: Path) -> None:
    """A corpus whose third line is Latin-1"""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(
        b'{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n' + '{"id": "c", "text": "caf\xe9"}\n'.encode("latin-1")
    )
    assert_clear_error(index(corpus, tmp_path / "store", tiny_st_dir), f"{corpus}:3: not valid UTF-8")


@CORPUS
def test_tsv_missing_column(tmp_path: Path, tiny_st_dir: Path) -> None:
    """A TSV corpus row with a missing column"""
    corpus = tmp_path / "psgs.tsv"
    corpus.write_text("id\ttext\ttitle\n1\tsome text\tTitle\n2\tno title here\n", encoding="utf-8")
    assert_clear_error(
        index(corpus, tmp_path / "store", tiny_st_dir), f"{corpus}:3: expected 3 tab-separated fields, got 2"
    )


@CORPUS
def test_corpus_with_nan(tmp_path: Path, tiny_st_dir: Path) -> None:
    """A JSONL corpus line with a NaN id (Python's JSON reader would accept it)"""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": NaN, "text": "x"}\n', encoding="utf-8")
    assert_clear_error(index(corpus, tmp_path / "store", tiny_st_dir), f"{corpus}:1: NaN is not a finite number")


@CORPUS
def test_giant_word(tmp_path: Path, tiny_st_dir: Path) -> None:
    """A document with a 2 MB word without spaces (it used to become one 2 MB passage)"""
    corpus = _jsonl(tmp_path, {"id": "ok", "text": "fine text"}, {"id": "blob", "text": "start " + "A" * 2_000_000})
    result = index(corpus, tmp_path / "store", tiny_st_dir)
    assert_clear_error(result, f"{corpus}:2: document 'blob' has a word of 2,000,000 characters", "limit 1,000")


@CORPUS
def test_giant_line(tmp_path: Path, tiny_st_dir: Path) -> None:
    """A corpus line of 9 MB (refused before the line is read into memory)"""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        '{"id": "ok", "text": "fine"}\n{"id": "big", "text": "' + "word " * 1_800_000 + '"}\n', encoding="utf-8"
    )
    assert_clear_error(
        index(corpus, tmp_path / "store", tiny_st_dir), f"{corpus}:2: the line is longer than 8,388,608 bytes"
    )


@CORPUS
def test_passage_too_long(tmp_path: Path, tiny_st_dir: Path) -> None:
    """A document whose 100-word passage would hold 50,000 characters"""
    corpus = _jsonl(tmp_path, {"id": "dense", "text": " ".join(["x" * 500] * 100)})
    assert_clear_error(
        index(corpus, tmp_path / "store", tiny_st_dir), "document 'dense': passage 0 has 50,099 characters"
    )


@pytest.mark.reliability(category="corpus files", expect="correct result")
def test_crlf_corpus_with_blank_lines(tmp_path: Path, tiny_st_dir: Path) -> None:
    """A Windows (CRLF) corpus with blank lines between documents"""
    from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(
        b'{"id": "a", "title": "A", "text": "alpha text"}\r\n\r\n{"id": "b", "title": "B", "text": "beta text"}\r\n'
    )
    assert_success(index(corpus, tmp_path / "store", tiny_st_dir))
    stored = EmbeddedDocumentStore(path=str(tmp_path / "store")).filter_documents()
    assert sorted((d.id, d.content) for d in stored) == [("a#0", "alpha text"), ("b#0", "beta text")]
