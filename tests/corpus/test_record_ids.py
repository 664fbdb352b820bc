"""The record id rule (``corpus/record_ids.py``) and where it applies: corpus files, ``records``, the splitter."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from haystack import Document

from dpr_components.corpus.files import CorpusError, read_corpus
from dpr_components.corpus.passages import split_document
from dpr_components.corpus.record_ids import (
    MAX_LOOKUP_ID_CHARS,
    MAX_RECORD_ID_CHARS,
    check_record_id,
    lookup_id_problem,
    passage_id,
    record_id_problem,
    split_passage_id,
)
from dpr_components.corpus.records import read_records
from haystack_integrations.components.preprocessors.dpr.dpr_passage_splitter import DPRPassageSplitter

VALID = {
    "word": "hamlet",
    "number": "42",
    "hash-in-the-middle": "Hamlet#Plot",
    "url-with-fragment": "https://example.org/wiki/Hamlet#Plot",
    "hash-at-the-end": "x#",
    "hash-only": "#",
    "hash-then-letters": "a#0x",
    "several-hashes": "a#b#c",
    "inner-spaces": "Hamlet  act 1",
    "three-dots": "...",
    "ascii-punctuation": string.punctuation,
    "non-ascii": "Ελσίνορε 😀 ﷽ é",  # letters, a symbol outside the BMP, a ligature, a combining mark
    "longest": "x" * MAX_RECORD_ID_CHARS,
}

INVALID = {
    "empty": ("", "is empty"),
    "spaces-only": ("   ", "is empty"),
    "too-long": ("x" * 10_000, "has 10,000 characters; an id has at most 1,000"),
    "one-too-long": ("x" * (MAX_RECORD_ID_CHARS + 1), "has 1,001 characters"),
    "newline": ("a\nb", "holds U+000A (a control character) at character 1"),
    "tab": ("a\tb", "U+0009 (a control character)"),
    "nul": ("\x00", "U+0000 (a control character)"),
    "delete": ("a\x7f", "U+007F (a control character)"),
    "zero-width-space": ("a\u200bb", "U+200B (an invisible formatting character)"),
    "byte-order-mark": ("\ufeffhamlet", "U+FEFF (an invisible formatting character)"),
    "no-break-space": ("a\u00a0b", "U+00A0 (a space other than U+0020)"),
    "line-separator": ("a\u2028b", "U+2028 (a line separator)"),
    "private-use": ("a\ue000", "U+E000 (a private-use character)"),
    "lone-surrogate": ("a\ud800", "U+D800 (a lone surrogate)"),
    "leading-space": (" hamlet", "starts or ends with a space"),
    "trailing-space": ("hamlet ", "starts or ends with a space"),
    "dot": (".", "a dot segment"),
    "two-dots": ("..", "a dot segment"),
    "passage-id": ("hamlet#0", "ends in '#0', the form of a passage id (passage 0 of document 'hamlet')"),
    "passage-id-long-number": ("hamlet#12345678901", "the form of a passage id"),
    "passage-id-leading-zero": ("hamlet#007", "ends in '#007'"),
    "passage-id-of-nothing": ("#3", "the form of a passage id"),
}


@pytest.mark.parametrize("value", list(VALID.values()), ids=list(VALID))
def test_valid_ids(value: str) -> None:
    assert record_id_problem(value) is None
    assert check_record_id(value, "field 'id'") == value
    assert lookup_id_problem(value) is None


@pytest.mark.parametrize(("value", "fragment"), list(INVALID.values()), ids=list(INVALID))
def test_invalid_ids(value: str, fragment: str) -> None:
    problem = record_id_problem(value)
    assert problem is not None and fragment in problem and "\n" not in problem, problem
    with pytest.raises(ValueError, match=r"^field 'id' "):
        check_record_id(value, "field 'id'")


@pytest.mark.parametrize("record", list(VALID.values()), ids=list(VALID))
def test_no_passage_id_is_a_record_id(record: str) -> None:
    """Every passage id the splitter forms is refused as a record id and names its record and number."""
    for index in (0, 7, 10, 123_456):
        formed = passage_id(record, index)
        assert split_passage_id(formed) == (record, str(index))
        problem = record_id_problem(formed) or ""
        assert "the form of a passage id" in problem or (len(formed) > MAX_RECORD_ID_CHARS and "characters" in problem)
        assert lookup_id_problem(formed) is None  # the documents route looks passage ids up


def test_passage_ids_of_one_document_are_distinct_from_every_other_documents() -> None:
    records = ["a", "a#", "a#b", "#", "a#0x", "a#b#c"]
    formed = [p.id for r in records for p in split_document(r, "", "w " * 250, words_per_passage=100)]
    assert len(formed) == len(set(formed)) == 3 * len(records)
    assert not set(formed) & set(records)


def test_lookup_ids() -> None:
    longest_passage = passage_id("x" * MAX_RECORD_ID_CHARS, 10**8)
    assert len(longest_passage) == MAX_LOOKUP_ID_CHARS and lookup_id_problem(longest_passage) is None
    assert "a passage id 1,010" in (lookup_id_problem("x" * (MAX_LOOKUP_ID_CHARS + 1)) or "")
    # A record indexed before the rule under a passage-shaped id is still reached by its passages' ids.
    assert lookup_id_problem("hamlet#0#0") is None
    assert lookup_id_problem("#0") == "is a passage id whose document id is empty"
    assert "U+000A" in (lookup_id_problem("a\nb#0") or "")
    assert "U+000A" in (lookup_id_problem("a\nb") or "")


# ---- where the rule applies ---------------------------------------------------------------------------


def test_jsonl_corpus_refuses_a_bad_id_with_file_and_line(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    lines = [{"id": "hamlet", "text": "Hamlet."}, {"id": "hamlet#0", "text": "Another."}]
    corpus.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with pytest.raises(CorpusError, match=rf"^{corpus}:2: field 'id' ends in '#0', the form of a passage id"):
        list(read_corpus(corpus))


def test_tsv_corpus_refuses_a_bad_id_with_file_and_line(tmp_path: Path) -> None:
    corpus = tmp_path / "psgs.tsv"
    corpus.write_text("id\ttext\ttitle\n1\tfirst\tA\n" + "9" * 1001 + "\tsecond\tB\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=rf"^{corpus}:3: field 'id' has 1,001 characters"):
        list(read_corpus(corpus))


def test_numeric_jsonl_ids_follow_the_rule(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": 7, "text": "seven"}\n{"id": 1.5, "text": "one and a half"}\n', encoding="utf-8")
    assert [r.id for r in read_corpus(corpus)] == ["7", "1.5"]


def test_records_refuse_a_bad_id_naming_the_record() -> None:
    records = [{"id": "ok", "text": "fine"}, {"id": "a\u0007b", "text": "bell"}]
    with pytest.raises(CorpusError, match=r"^records\[1\]: field 'id' holds U\+0007 \(a control character\)"):
        read_records(records)


def test_splitter_refuses_a_document_whose_id_looks_like_a_passage_id() -> None:
    with pytest.raises(ValueError, match=r"^document 'd#1': its id ends in '#1', the form of a passage id"):
        DPRPassageSplitter().run([Document(id="d#1", content="some words")])
    passages = DPRPassageSplitter().run([Document(id="d#x", content="some words")])["documents"]
    assert [p.id for p in passages] == ["d#x#0"]
