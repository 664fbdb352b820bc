"""The converted documents of a folder's files made ready to split: each with a stable id, its title and the
file's metadata, and each file that gave no usable text named with the reason.

A document's id is its file's path in the folder (``notes/plan.md``), and a record of a corpus file in the
folder is ``<path>/<record id>`` (``data/faq.jsonl/q7``), so re-indexing a changed file replaces its
passages and two folders' files never share an id. Its title comes from the document when it has one (a
Word file's title property, a PDF's title, an HTML page's ``<title>``, a Markdown file's front matter or
first heading, a corpus record's title), else from the file name without its extension. Its metadata is
the file's: ``path``, ``file_type``, ``modified`` and ``content_hash`` (with ``record_id`` for a record),
nothing else the converters add (their values need not be JSON)."""

from __future__ import annotations

import html
import io
import re
from typing import Any

from haystack import Document
from haystack.dataclasses import ByteStream

from dpr_components.corpus.conversion_failures import failure_reason
from dpr_components.corpus.folder_files import HASH_KEY, MODIFIED_KEY, PATH_KEY, TYPE_KEY, Refusal
from dpr_components.corpus.record_ids import record_id_problem
from dpr_components.utils.validation import describe_long_word, find_long_word

RECORD_KEY = "record_id"
MAX_TITLE_CHARS = 300
_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_MARKDOWN_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_NO_TEXT = {
    "pdf": "no text found in it (a scanned PDF holds only images of its pages: run OCR on it first)",
}


def file_documents(documents: list[Document], sources: list[ByteStream]) -> tuple[list[Document], list[Refusal]]:
    """The documents of each file of ``sources`` made ready to split, in the order of ``sources``, and the
    files that gave none (see the module docstring); documents of no folder file pass unchanged."""
    by_path: dict[str, list[Document]] = {}
    passing = []
    for document in documents:
        path = document.meta.get(PATH_KEY)
        if isinstance(path, str) and HASH_KEY in document.meta:
            by_path.setdefault(path, []).append(document)
        else:
            passing.append(document)
    ready: list[Document] = []
    refused: list[Refusal] = []
    for source in sources:
        path, digest = source.meta[PATH_KEY], str(source.meta[HASH_KEY])
        logged = failure_reason(path, digest)
        converted = by_path.get(path)
        if converted is None:
            refused.append(Refusal(path, logged or "the converter returned nothing for it"))
            continue
        made = _file_documents(source, converted)
        if isinstance(made, str):
            refused.append(Refusal(path, made))
        else:
            ready.extend(made)
    return [*ready, *passing], refused


def _file_documents(source: ByteStream, converted: list[Document]) -> list[Document] | str:
    """The documents of one file, or why it has none."""
    kind = str(source.meta[TYPE_KEY])
    with_text = [d for d in converted if isinstance(d.content, str) and d.content.strip()]
    if not with_text:
        return _NO_TEXT.get(kind, "no text found in it")
    made = []
    for document in with_text:
        content = str(document.content)
        record = document.meta.get(RECORD_KEY)
        doc_id = f"{source.meta[PATH_KEY]}/{record}" if isinstance(record, str) else str(source.meta[PATH_KEY])
        problem = record_id_problem(doc_id)
        if problem:
            return f"document id {doc_id[:80]!r} {problem}"
        long_word = find_long_word(content)
        if long_word is not None:
            return f"it has {describe_long_word(long_word)}, which is not text to index"
        meta = {key: source.meta[key] for key in (PATH_KEY, TYPE_KEY, MODIFIED_KEY, HASH_KEY)}
        if isinstance(record, str):
            meta[RECORD_KEY] = record
        made.append(Document(id=doc_id, content=content, meta={"title": _title(kind, source, document), **meta}))
    return made


def _title(kind: str, source: ByteStream, document: Document) -> str:
    """The document's own title, else the file name without its extension."""
    found = document.meta.get("title")
    if RECORD_KEY in document.meta:
        return found if isinstance(found, str) else ""
    if not (isinstance(found, str) and found.strip()):
        found = _own_title(kind, source.data, document.meta)
    name = str(source.meta[PATH_KEY]).rsplit("/", 1)[-1]
    title = " ".join(found.split()) if isinstance(found, str) else ""
    return (title or (name.rsplit(".", 1)[0] if "." in name[1:] else name))[:MAX_TITLE_CHARS]


def _own_title(kind: str, data: bytes, meta: dict[str, Any]) -> str | None:
    """The title a file of ``kind`` states itself, if any."""
    if kind == "docx":
        properties = meta.get("docx")
        return properties.get("title") if isinstance(properties, dict) else None
    if kind == "html":
        found = _HTML_TITLE.search(data.decode("utf-8", errors="replace")[:65536])
        return html.unescape(found.group(1)) if found else None
    if kind == "md":
        found = _MARKDOWN_HEADING.search(data.decode("utf-8", errors="replace"))
        return found.group(1) if found else None
    if kind == "pdf":
        return _pdf_title(data)
    return None


def _pdf_title(data: bytes) -> str | None:
    """The title in a PDF's document information, if pypdf can read it."""
    try:
        from pypdf import PdfReader

        info = PdfReader(io.BytesIO(data)).metadata
        title = info.title if info is not None else None
    except Exception:  # noqa: BLE001 - a title is optional: any failure falls back to the file name
        return None
    return title if isinstance(title, str) else None
