"""The folder ``benchmarks/files/folder_indexing.py`` indexes: files of every kind ``index_files`` converts
(``.txt .md .html .pdf .docx``, in equal shares), each holding a few consecutive documents of a JSONL
corpus (the Wikipedia pool: ``{"id", "title", "text", "source"}`` per line, ``nq-article`` rows left out)
as its paragraphs. Text files start with the title on a line of its own, Markdown files with a
``# title`` heading; HTML pages have a ``<title>`` and ``<p>`` paragraphs, PDFs (written with pypdf,
Helvetica, ASCII text) and Word files (python-docx) carry the title in their properties. A file's name is its number and title (``0007 Octet rule.md``)."""

from __future__ import annotations

import html
import json
import re
import textwrap
import unicodedata
from collections.abc import Callable, Iterator
from itertools import cycle, islice
from pathlib import Path
from typing import Any

KINDS = (".txt", ".md", ".html", ".pdf", ".docx")
SKIPPED_SOURCE = "nq-article"  # whole articles: far longer than the pool's paragraphs
PDF_LINES_PER_PAGE, PDF_LINE_CHARS = 42, 90
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9 ,()'-]+")


def corpus_rows(path: Path) -> Iterator[dict[str, str]]:
    """The corpus's rows with text (``title`` and ``text``), ``nq-article`` ones left out."""
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                row = json.loads(line)
                if row.get("source") != SKIPPED_SOURCE and str(row.get("text", "")).strip():
                    yield {"title": str(row.get("title") or ""), "text": str(row["text"])}


def ascii_text(text: str) -> str:
    """``text`` in ASCII (accents dropped, other characters left out): what Helvetica shows as written."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def file_name(number: int, title: str, suffix: str) -> str:
    """``0007 Octet rule.md``: the number keeps names apart, the title (ASCII, safe characters, 60 at most)
    makes the name's stem read like one."""
    safe = " ".join(_UNSAFE_NAME.sub(" ", ascii_text(title)).split())[:60].strip()
    return f"{number:04d} {safe}{suffix}" if safe else f"{number:04d}{suffix}"


def write_text(path: Path, title: str, paragraphs: list[str]) -> None:
    path.write_text("\n\n".join([title, *paragraphs]) + "\n", encoding="utf-8")


def write_markdown(path: Path, title: str, paragraphs: list[str]) -> None:
    path.write_text(f"# {title}\n\n" + "\n\n".join(paragraphs) + "\n", encoding="utf-8")


def write_html(path: Path, title: str, paragraphs: list[str]) -> None:
    body = "".join(f"<p>{html.escape(paragraph)}</p>\n" for paragraph in paragraphs)
    page = f"<html><head><title>{html.escape(title)}</title></head><body><article>\n{body}</article></body></html>\n"
    path.write_text(page, encoding="utf-8")


def write_pdf(path: Path, title: str, paragraphs: list[str]) -> None:
    """Pages of Helvetica lines (their text extractable), an empty line between paragraphs, the title set."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    lines: list[str] = []
    for paragraph in paragraphs:
        lines += [*textwrap.wrap(ascii_text(paragraph), PDF_LINE_CHARS), ""]
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    fonts = DictionaryObject({NameObject("/F1"): writer._add_object(font)})
    for start in range(0, len(lines), PDF_LINES_PER_PAGE):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
        shown = " ".join(f"({_pdf_string(line)}) Tj 0 -16 Td" for line in lines[start : start + PDF_LINES_PER_PAGE])
        content = DecodedStreamObject()
        content.set_data(f"BT /F1 12 Tf 72 740 Td {shown} ET".encode("ascii"))
        page[NameObject("/Contents")] = writer._add_object(content)
    writer.add_metadata({"/Title": ascii_text(title)})
    with path.open("wb") as handle:
        writer.write(handle)


def _pdf_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def write_docx(path: Path, title: str, paragraphs: list[str]) -> None:
    """A Word file of ``paragraphs`` with the title property."""
    import docx

    document = docx.Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    document.core_properties.title = title
    document.save(str(path))


WRITERS: dict[str, Callable[[Path, str, list[str]], None]] = {
    ".txt": write_text,
    ".md": write_markdown,
    ".html": write_html,
    ".pdf": write_pdf,
    ".docx": write_docx,
}


def write_mixed_folder(folder: Path, corpus: Path, files: int, paragraphs: int) -> dict[str, Any]:
    """``files`` files in ``folder``, the kinds in turn, each of ``paragraphs`` consecutive corpus rows (the
    corpus read again from its start when it runs out); what was written: files per kind, the paragraphs'
    words, the corpus rows used."""
    rows = list(islice(corpus_rows(corpus), files * paragraphs))
    if not rows:
        raise SystemExit(f"{corpus} holds no document with text (other than {SKIPPED_SOURCE} ones)")
    taken = cycle(rows)
    folder.mkdir(parents=True, exist_ok=True)
    per_kind = dict.fromkeys(KINDS, 0)
    words = 0
    for number in range(files):
        suffix = KINDS[number % len(KINDS)]
        documents = list(islice(taken, paragraphs))
        title = documents[0]["title"]
        texts = [document["text"] for document in documents]
        WRITERS[suffix](folder / file_name(number, title, suffix), title, texts)
        per_kind[suffix] += 1
        words += sum(len(text.split()) for text in texts)
    return {"files": files, "per_kind": per_kind, "paragraphs_per_file": paragraphs, "words": words,
            "corpus_rows": len(rows)}  # fmt: skip
