"""The folder lister: each kind of file checked by its content, symbolic links, hidden files, encodings,
the files named by a run step, and the folder itself."""

from __future__ import annotations

import codecs
import hashlib
import os
import re
from pathlib import Path

import pytest

from dpr_components.corpus.folder_files import list_folder
from tests.helpers.folder_documents import write_docx, write_mixed_folder, write_pdf


def _reasons(folder: Path, **options: object) -> dict[str, str]:
    return {r.path: r.reason for r in list_folder(str(folder), **options).refused}  # type: ignore[arg-type]


def test_each_kind_is_listed_with_its_path_type_time_and_hash(tmp_path: Path) -> None:
    expected = write_mixed_folder(tmp_path)
    listing = list_folder(str(tmp_path))
    assert [f.path for f in listing.files] == expected
    assert listing.refused == [] and not listing.other_types
    kinds = {f.path: f.kind.name for f in listing.files}
    assert kinds == {
        "comet.pdf": "pdf",
        "faq.jsonl": "jsonl",
        "guide/intro.md": "md",
        "notes.txt": "txt",
        "pages/river.html": "html",
        "psgs.tsv": "tsv",
        "spice.docx": "docx",
    }
    pdf = next(f for f in listing.files if f.path == "comet.pdf")
    raw = (tmp_path / "comet.pdf").read_bytes()
    assert pdf.sha256 == hashlib.sha256(raw).hexdigest() and pdf.data == raw and pdf.size == len(raw)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", pdf.modified)
    assert pdf.meta() == {"path": "comet.pdf", "file_type": "pdf", "modified": pdf.modified, "content_hash": pdf.sha256}


def test_listed_without_data_keeps_only_the_hash(tmp_path: Path) -> None:
    write_mixed_folder(tmp_path)
    with_data, without = list_folder(str(tmp_path)), list_folder(str(tmp_path), keep_data=False)
    assert [f.data for f in without.files] == [None] * len(with_data.files)
    assert [f.sha256 for f in without.files] == [f.sha256 for f in with_data.files]


def test_hidden_entries_are_passed_over_and_other_kinds_counted(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "notes.txt").write_text("inside .git", encoding="utf-8")
    (tmp_path / ".draft.md").write_text("hidden", encoding="utf-8")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG")
    (tmp_path / "sub.dir").mkdir()
    (tmp_path / "sub.dir" / "README").write_text("no extension", encoding="utf-8")
    (tmp_path / "a.txt").write_text("visible", encoding="utf-8")
    listing = list_folder(str(tmp_path))
    assert [f.path for f in listing.files] == ["a.txt"]
    assert dict(listing.other_types) == {".png": 1, "(no extension)": 1}


def test_a_link_leading_outside_the_folder_is_not_followed(tmp_path: Path) -> None:
    folder, outside = tmp_path / "docs", tmp_path / "secret"
    folder.mkdir()
    outside.mkdir()
    (outside / "keys.txt").write_text("private key", encoding="utf-8")
    (folder / "keys.txt").symlink_to(outside / "keys.txt")
    (folder / "everything").symlink_to(outside)
    listing = list_folder(str(folder))
    assert listing.files == []
    assert {r.path: r.reason for r in listing.refused} == {
        "everything": "a symbolic link leading outside the folder, which is not followed",
        "keys.txt": "a symbolic link leading outside the folder, which is not followed",
    }


def test_links_inside_the_folder_are_followed_once_without_looping(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.txt").write_text("the text", encoding="utf-8")
    (tmp_path / "latest.txt").symlink_to(tmp_path / "real" / "a.txt")
    (tmp_path / "real" / "loop").symlink_to(tmp_path)  # a folder leading back up
    (tmp_path / "gone.txt").symlink_to(tmp_path / "missing.txt")
    listing = list_folder(str(tmp_path))
    assert [f.path for f in listing.files] == ["latest.txt", "real/a.txt"]
    assert {r.path: r.reason for r in listing.refused} == {
        "gone.txt": "a symbolic link to nothing (its target is missing)"
    }


def test_under_an_input_root_no_link_is_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.txt").write_text("the text", encoding="utf-8")
    (tmp_path / "b.txt").symlink_to(tmp_path / "a.txt")
    monkeypatch.setenv("DPR_INPUT_ROOT", str(tmp_path))
    listing = list_folder(str(tmp_path))
    assert [f.path for f in listing.files] == ["a.txt"]
    assert _reasons(tmp_path) == {"b.txt": "a symbolic link, which is not followed under the input root"}


def test_a_folder_outside_the_input_root_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.setenv("DPR_INPUT_ROOT", str(tmp_path / "root"))
    with pytest.raises(ValueError, match="outside the input root"):
        list_folder(str(tmp_path / "elsewhere"))


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("photo.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not text: it holds a NUL character"),
        ("latin.txt", "caf\u00e9 cr\u00e8me".encode("latin-1"), "not UTF-8 text (invalid continuation byte at byte 3)"),
        ("utf16.md", "no byte order mark".encode("utf-16-le"), "not text: it holds a NUL character"),
        ("empty.md", b"", "the file is empty"),
        ("blank.txt", b" \n\n\t\n", "it holds no text"),
        ("page.pdf", b"<html>saved as pdf</html>", "not a PDF: it does not start with %PDF-"),
        (
            "old.docx",
            b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(64),
            "a Word 97-2003 file or one saved with a password",
        ),
        ("text.docx", b"just some text", "not a .docx file: a .docx file is a zip archive and this is not one"),
    ],
)
def test_a_file_that_is_not_what_its_extension_says_is_refused(
    tmp_path: Path, name: str, content: bytes, reason: str
) -> None:
    (tmp_path / name).write_bytes(content)
    reasons = _reasons(tmp_path)
    assert list(reasons) == [name] and reason in reasons[name], reasons


def test_a_zip_that_is_not_a_word_file_is_refused(tmp_path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(tmp_path / "archive.docx", "w") as archive:
        archive.writestr("readme.txt", "not a word file")
    assert _reasons(tmp_path) == {"archive.docx": "not a .docx file: the zip archive holds no word/document.xml"}


@pytest.mark.parametrize(
    ("content", "text"),
    [
        (codecs.BOM_UTF8 + "caf\u00e9".encode(), "caf\u00e9"),
        ("caf\u00e9 \u2014 \u4e2d\u6587".encode("utf-16"), "caf\u00e9 \u2014 \u4e2d\u6587"),
        (codecs.BOM_UTF16_BE + "caf\u00e9".encode("utf-16-be"), "caf\u00e9"),
    ],
    ids=["utf-8 with BOM", "utf-16 little endian with BOM", "utf-16 big endian with BOM"],
)
def test_text_with_a_byte_order_mark_reaches_its_converter_as_utf8(tmp_path: Path, content: bytes, text: str) -> None:
    (tmp_path / "a.txt").write_bytes(content)
    (file,) = list_folder(str(tmp_path)).files
    assert file.data == text.encode("utf-8")
    assert file.sha256 == hashlib.sha256(content).hexdigest()  # the hash is of the bytes on disk


def test_an_html_page_may_declare_its_character_set(tmp_path: Path) -> None:
    page = '<html><head><meta charset="windows-1252"><title>Caf\u00e9</title></head><body>cr\u00e8me</body></html>'
    (tmp_path / "old.html").write_bytes(page.encode("cp1252"))
    (tmp_path / "old.txt").write_bytes("cr\u00e8me".encode("cp1252"))
    listing = list_folder(str(tmp_path))
    assert [f.data for f in listing.files] == [page.encode("utf-8")]
    assert [r.path for r in listing.refused] == ["old.txt"]


def test_a_path_that_cannot_be_a_document_id_is_refused(tmp_path: Path) -> None:
    (tmp_path / "chapter#12").mkdir()
    (tmp_path / "odd\u200bname.txt").write_text("zero-width space in the name", encoding="utf-8")
    (tmp_path / "release#3.md").write_text("the form of a passage id without the extension?", encoding="utf-8")
    reasons = _reasons(tmp_path)
    assert list(reasons) == ["odd\u200bname.txt"], reasons
    assert "its path cannot be a document id" in reasons["odd\u200bname.txt"]


def test_a_fifo_with_a_known_extension_does_not_hang_the_listing(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.txt")
    assert _reasons(tmp_path) == {"pipe.txt": "not a regular file"}


def test_only_the_named_files_are_read(tmp_path: Path) -> None:
    write_mixed_folder(tmp_path)
    listing = list_folder(str(tmp_path), only=["notes.txt", "guide/intro.md", "gone.txt"])
    assert [f.path for f in listing.files] == ["guide/intro.md", "notes.txt"]
    assert listing.present == ["guide/intro.md", "notes.txt"]


@pytest.mark.parametrize("name", ["../outside.txt", "/etc/passwd", ""])
def test_a_named_file_must_be_inside_the_folder(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="is not a path inside the folder"):
        list_folder(str(tmp_path), only=[name])


def test_the_folder_must_be_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        list_folder(str(tmp_path / "missing"))
    (tmp_path / "corpus.jsonl").write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match=r"is a file, not a folder.*haystack run index"):
        list_folder(str(tmp_path / "corpus.jsonl"))


def test_documents_made_at_test_time_are_real_pdf_and_word_files(tmp_path: Path) -> None:
    write_pdf(tmp_path / "a.pdf", ["one line"])
    write_docx(tmp_path / "b.docx", ["one paragraph"])
    assert [f.kind.name for f in list_folder(str(tmp_path)).files] == ["pdf", "docx"]
