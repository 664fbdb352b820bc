"""Converted files made ready to split: ids from paths, titles, the files' metadata only, and each file without
text named with the reason its converter gave (kept from its warning, which is kept off the console)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from haystack import Document
from haystack.components.converters import HTMLToDocument, PyPDFToDocument
from haystack.dataclasses import ByteStream

from dpr_components.corpus.conversion_failures import capture_converter_failures
from dpr_components.corpus.file_documents import file_documents
from tests.helpers.folder_documents import write_broken_pdf, write_pdf


def _source(path: str, kind: str, data: bytes = b"data", digest: str = "h1") -> ByteStream:
    meta = {"path": path, "file_type": kind, "modified": "2025-01-01T00:00:00Z", "content_hash": digest}
    return ByteStream(data=data, meta=meta)


def _converted(source: ByteStream, text: str, **meta: object) -> Document:
    return Document(content=text, meta={**source.meta, "file_path": "/somewhere/x", **meta})


def test_ids_titles_and_meta_come_from_the_file() -> None:
    page = b"<html><head><title>The  River &amp; Sea</title></head><body>x</body></html>"
    sources = [_source("notes/a.txt", "txt"), _source("web/page.html", "html", page), _source("faq.jsonl", "jsonl")]
    documents = [
        _converted(sources[0], "plain text"),
        _converted(sources[1], "the river text", extra={"not": "kept"}),
        _converted(sources[2], "a record", title="Volcanoes", record_id="q1"),
    ]
    ready, refused = file_documents(documents, sources)
    assert refused == []
    assert [d.id for d in ready] == ["notes/a.txt", "web/page.html", "faq.jsonl/q1"]
    assert [d.meta["title"] for d in ready] == ["a", "The River & Sea", "Volcanoes"]
    assert ready[2].meta == {
        "title": "Volcanoes",
        "path": "faq.jsonl",
        "file_type": "jsonl",
        "modified": "2025-01-01T00:00:00Z",
        "content_hash": "h1",
        "record_id": "q1",
    }
    assert "extra" not in ready[1].meta and "file_path" not in ready[1].meta


def test_markdown_and_word_titles() -> None:
    md, docx = _source("guide.md", "md", b"Intro line\n\n# The Real Title #\n"), _source("w.docx", "docx")
    ready, _ = file_documents(
        [_converted(md, "text"), _converted(docx, "text", docx={"title": "From Word"})], [md, docx]
    )
    assert [d.meta["title"] for d in ready] == ["The Real Title", "From Word"]


def test_a_file_without_text_or_without_a_document_is_named() -> None:
    sources = [_source("scan.pdf", "pdf"), _source("blank.docx", "docx"), _source("lost.md", "md")]
    _, refused = file_documents([_converted(sources[0], "  \f "), _converted(sources[1], "")], sources)
    assert [(r.path, r.reason) for r in refused] == [
        ("scan.pdf", "no text found in it (a scanned PDF holds only images of its pages: run OCR on it first)"),
        ("blank.docx", "no text found in it"),
        ("lost.md", "the converter returned nothing for it"),
    ]


def test_a_word_of_more_than_1000_characters_is_refused() -> None:
    source = _source("blob.txt", "txt")
    _, refused = file_documents([_converted(source, "text " + "A" * 1_500)], [source])
    assert [r.path for r in refused] == ["blob.txt"] and "a word of 1,500 characters" in refused[0].reason


def test_documents_of_no_folder_file_pass_unchanged() -> None:
    other = Document(id="x", content="from elsewhere")
    ready, refused = file_documents([other], [])
    assert ready == [other] and refused == []


def test_a_converter_warning_becomes_the_reason_and_stays_off_the_console(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path
    capture_converter_failures()
    broken = _source("broken.pdf", "pdf", write_broken_pdf(folder / "b.pdf").read_bytes(), "h-broken")
    locked = _source("locked.pdf", "pdf", write_pdf(folder / "l.pdf", ["secret"], password="pw").read_bytes(), "h-l")
    good = _source("good.pdf", "pdf", write_pdf(folder / "g.pdf", ["readable text"], title="Good").read_bytes(), "h-g")
    with caplog.at_level(logging.WARNING):
        converted = PyPDFToDocument().run(sources=[broken, locked, good])["documents"]
        HTMLToDocument().run(sources=[ByteStream(data=b"", meta={"path": "other"})])  # not a folder's file
    ready, refused = file_documents(converted, [broken, locked, good])
    assert [d.id for d in ready] == ["good.pdf"] and ready[0].meta["title"] == "Good"
    reasons = {r.path: r.reason for r in refused}
    assert reasons["broken.pdf"].startswith("the PDF converter could not read it: ")
    assert reasons["locked.pdf"].startswith("the PDF is encrypted and cannot be read without its password")
    logged = [r.getMessage() for r in caplog.records]
    assert not any("broken.pdf" in m or "locked.pdf" in m for m in logged), logged
    assert any("Skipping" in m for m in logged), "warnings about other sources pass through"
    assert file_documents([], [broken])[1][0].reason == "the converter returned nothing for it"  # asked once
