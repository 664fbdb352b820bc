"""Corpus reading, DPR passage splitting and the indexing components."""

from __future__ import annotations

from pathlib import Path

import pytest
from haystack import Document

from dpr_components.corpus.files import CorpusError, read_corpus
from dpr_components.corpus.passages import split_text
from haystack_integrations.components.converters.dpr.corpus_reader import CorpusReader
from haystack_integrations.components.preprocessors.dpr.dpr_passage_splitter import DPRPassageSplitter


def test_split_text_makes_disjoint_100_word_blocks() -> None:
    words = [f"w{i}" for i in range(250)]
    blocks = split_text(" ".join(words))
    assert [len(b.split()) for b in blocks] == [100, 100, 50]
    assert " ".join(blocks).split() == words
    assert split_text("   ") == []
    with pytest.raises(ValueError):
        split_text("a", 0)


def test_splitter_keeps_title_and_gives_stable_ids() -> None:
    doc = Document(id="doc", content=" ".join(["word"] * 150), meta={"title": "T", "source": "x"})
    passages = DPRPassageSplitter().run([doc])["documents"]
    assert [p.id for p in passages] == ["doc#0", "doc#1"]
    assert passages[1].meta == {"title": "T", "source": "x", "document_id": "doc", "passage_index": 1}
    assert [p.id for p in DPRPassageSplitter().run([doc])["documents"]] == ["doc#0", "doc#1"]


def test_splitter_rejects_empty_document() -> None:
    with pytest.raises(ValueError, match="'e' has no text"):
        DPRPassageSplitter().run([Document(id="e", content="  ")])


def test_jsonl_reader(small_corpus_file: Path) -> None:
    docs = CorpusReader().run(str(small_corpus_file))["documents"]
    assert docs[0].id == "hamlet" and docs[0].meta["title"] == "Hamlet"


def test_tsv_reader_dpr_layout(tmp_path: Path) -> None:
    path = tmp_path / "psgs_w100.tsv"
    path.write_text('id\ttext\ttitle\n1\t"Aaron is a prophet"\tAaron\n2\tSecond passage\tB\n', encoding="utf-8")
    records = list(read_corpus(path))
    assert [(r.id, r.title, r.text) for r in records] == [
        ("1", "Aaron", "Aaron is a prophet"),
        ("2", "B", "Second passage"),
    ]


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"id": "a", "text": "ok"}\n{"id": "b", "text": \n', r"corpus.jsonl:2: invalid JSON"),
        ('{"id": "a", "title": "t"}\n', r"corpus.jsonl:1: missing field 'text'"),
        ('{"id": "a", "text": "  "}\n', r"corpus.jsonl:1: document 'a' has no text"),
        ('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', r"corpus.jsonl:2: id 'a' already used on line 1"),
        ('{"id": "a", "text": 5}\n', r"corpus.jsonl:1: field 'text' must be a string"),
        ('["a"]\n', r"corpus.jsonl:1: expected a JSON object"),
    ],
)
def test_malformed_jsonl_names_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CorpusError, match=message):
        list(read_corpus(path))


def test_undecodable_bytes_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b'{"id": "a", "text": "fine"}\n{"id": "b", "text": "caf\xe9"}\n')
    with pytest.raises(CorpusError, match=r"corpus.jsonl:2: not valid UTF-8"):
        list(read_corpus(path))


def test_tsv_errors(tmp_path: Path) -> None:
    bad_header = tmp_path / "a.tsv"
    bad_header.write_text("pid\tpassage\n1\tx\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"a.tsv:1: header must name"):
        list(read_corpus(bad_header))
    bad_row = tmp_path / "b.tsv"
    bad_row.write_text("id\ttext\ttitle\n1\tonly two\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"b.tsv:2: expected 3 tab-separated fields, got 2"):
        list(read_corpus(bad_row))


def test_missing_file_and_unknown_extension(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="does not exist"):
        list(read_corpus(tmp_path / "nope.jsonl"))
    (tmp_path / "c.xml").write_text("<x/>")
    with pytest.raises(CorpusError, match="extension"):
        list(read_corpus(tmp_path / "c.xml"))


def test_skip_empty_documents(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"id": "a", "text": ""}\n{"id": "b", "text": "words"}\n', encoding="utf-8")
    assert [d.id for d in CorpusReader(on_empty="skip").run(str(path))["documents"]] == ["b"]


def test_shared_pool_splits_into_55350_passages(shared_data: Path) -> None:
    from dpr_components.corpus.passages import split_documents

    records = read_corpus(shared_data / "wiki" / "documents.jsonl")
    assert sum(1 for _ in split_documents((r.id, r.title, r.text) for r in records)) == 55350
