"""The kinds of file a folder of documents is indexed from, told by extension and checked by content.

Each file is checked before any converter sees it, so a file that only wears the extension (a binary
file named ``.txt``, a Word 97 file renamed ``.docx``, a web page saved as ``.pdf``) is refused with
its reason instead of becoming noise in the index. Text (``.txt``, ``.md``, ``.html``, ``.jsonl``,
``.tsv``) is read as UTF-8, with or without a byte-order mark, or as UTF-16 with one; an HTML page
may name its own character set. Whatever it was, a text file reaches its converter as UTF-8."""

from __future__ import annotations

import codecs
import io
import re
import zipfile
from dataclasses import dataclass

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
MAX_FILE_BYTES = 256 * 1024 * 1024
_PDF_HEADER = b"%PDF-"
_OLE_HEADER = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Word 97-2003, and Office files saved with a password
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_HTML_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


@dataclass(frozen=True)
class FileType:
    """A kind of file: its name in ``meta["file_type"]``, its extensions, the MIME type it is routed by
    and whether it is text (decoded, checked and handed on as UTF-8)."""

    name: str
    suffixes: tuple[str, ...]
    mime_type: str
    text: bool


FILE_TYPES = (
    FileType("txt", (".txt", ".text"), "text/plain", text=True),
    FileType("md", (".md", ".markdown"), "text/markdown", text=True),
    FileType("html", (".html", ".htm"), "text/html", text=True),
    FileType("pdf", (".pdf",), "application/pdf", text=False),
    FileType("docx", (".docx",), DOCX_MIME, text=False),
    FileType("jsonl", (".jsonl",), "application/jsonl", text=True),
    FileType("tsv", (".tsv",), "text/tab-separated-values", text=True),
)
_BY_SUFFIX = {suffix: kind for kind in FILE_TYPES for suffix in kind.suffixes}
SUFFIXES = tuple(_BY_SUFFIX)


class ContentRefused(ValueError):
    """A file's bytes are not what its extension says; the message is the reason, for a line naming the file."""


def file_type_of(name: str) -> FileType | None:
    """The kind of the file called ``name`` by its extension (any case), or ``None`` for other files."""
    dot = name.rfind(".")
    return _BY_SUFFIX.get(name[dot:].lower()) if dot > 0 else None


def suffix_of(name: str) -> str:
    """``name``'s extension in lower case, or ``(no extension)``: how files not indexed are counted."""
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else "(no extension)"


def checked_content(kind: FileType, data: bytes) -> bytes:
    """The bytes ``kind``'s converter is given: text as UTF-8 (without a byte-order mark), other files as
    they are; :class:`ContentRefused` when the bytes are not a file of that kind."""
    if not data:
        raise ContentRefused("the file is empty")
    if kind.text:
        utf16 = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
        text = _decoded(data, html=kind.name == "html") if utf16 or b"\x00" not in data else "\x00"
        if "\x00" in text:
            where = text.index("\x00") if utf16 else data.index(b"\x00")
            raise ContentRefused(
                f"not text: it holds a NUL character (at {'character' if utf16 else 'byte'} {where:,}), so it is "
                f"binary data under a {kind.suffixes[0]} name"
            )
        if not text.strip():
            raise ContentRefused("it holds no text (only spaces and blank lines)")
        return text.encode("utf-8")
    if kind.name == "pdf":
        if _PDF_HEADER not in data[:1024]:
            raise ContentRefused("not a PDF: it does not start with %PDF-")
        return data
    _check_docx(data)
    return data


def _decoded(data: bytes, html: bool) -> str:
    """``data`` as text: by its byte-order mark, else UTF-8, else (HTML) the character set it declares."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(codec)
            except UnicodeDecodeError as error:
                raise ContentRefused(
                    f"not valid {codec.upper()} text ({error.reason} at byte {error.start:,})"
                ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        declared = _declared_charset(data) if html else None
        if declared is not None:
            try:
                return data.decode(declared)
            except UnicodeDecodeError:
                pass
        raise ContentRefused(
            f"not UTF-8 text ({error.reason} at byte {error.start:,}); save it as UTF-8"
            + (" or declare its character set in a <meta charset> tag" if html else "")
        ) from None


def _declared_charset(data: bytes) -> str | None:
    """The codec of the character set an HTML page declares in its first 4 KB, if Python knows it."""
    found = _HTML_CHARSET.search(data[:4096])
    if found is None:
        return None
    try:
        return codecs.lookup(found.group(1).decode("ascii")).name
    except (LookupError, UnicodeDecodeError):
        return None


def _check_docx(data: bytes) -> None:
    """:class:`ContentRefused` unless ``data`` is a Word document (a zip archive holding ``word/document.xml``)."""
    if data.startswith(_OLE_HEADER):
        raise ContentRefused(
            "not a .docx file: it is a Word 97-2003 file or one saved with a password; "
            "save it as .docx without a password"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, ValueError, EOFError):
        raise ContentRefused("not a .docx file: a .docx file is a zip archive and this is not one") from None
    if "word/document.xml" not in names:
        raise ContentRefused("not a .docx file: the zip archive holds no word/document.xml")
