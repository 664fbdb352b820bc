"""Documents of each kind a folder is indexed from, made at test time: text, Markdown, HTML, and PDF and Word
files written with pypdf and python-docx (the [files] extra), plus broken and encrypted ones."""

from __future__ import annotations

from pathlib import Path


def write_pdf(path: Path, lines: list[str], title: str | None = None, password: str | None = None) -> Path:
    """A one-page PDF showing ``lines`` in Helvetica (its text extractable), with a title and a password if given."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    fonts = DictionaryObject({NameObject("/F1"): writer._add_object(font)})
    page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
    shown = " ".join(f"({_pdf_string(line)}) Tj 0 -16 Td" for line in lines)
    content = DecodedStreamObject()
    content.set_data(f"BT /F1 12 Tf 72 720 Td {shown} ET".encode("latin-1"))
    page[NameObject("/Contents")] = writer._add_object(content)
    if title is not None:
        writer.add_metadata({"/Title": title})
    if password is not None:
        writer.encrypt(user_password=password, algorithm="RC4-128")
    with path.open("wb") as handle:
        writer.write(handle)
    return path


def _pdf_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def write_docx(path: Path, paragraphs: list[str], title: str | None = None) -> Path:
    """A Word file of ``paragraphs``, with the title property if given."""
    import docx

    document = docx.Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    if title is not None:
        document.core_properties.title = title
    document.save(str(path))
    return path


def write_broken_pdf(path: Path) -> Path:
    """A file that starts like a PDF and is not one: the header, then bytes that are no PDF structure."""
    path.write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n" + b"this is not a PDF body\n" * 20)
    return path


MIXED_FOLDER = {
    "notes.txt": "Hamlet is a tragedy written by William Shakespeare about the prince of Denmark.",
    "guide/intro.md": "# Getting started\n\nThe lighthouse keeper logs every passing ship in a notebook.\n",
    "pages/river.html": (
        "<html><head><title>The River Page</title></head><body><article><p>The Danube flows through ten "
        "countries before it reaches the Black Sea, passing Vienna, Bratislava, Budapest and Belgrade on its "
        "way.</p></article></body></html>"
    ),
    "faq.jsonl": '{"id": "q1", "title": "Volcanoes", "text": "Mount Etna is an active volcano on Sicily."}\n',
    "psgs.tsv": "id\ttext\ttitle\np1\tThe koala sleeps up to twenty hours a day.\tKoalas\n",
}
PDF_LINES = ["The comet returns every seventy six years.", "Astronomers wait for its next visit."]
DOCX_PARAGRAPHS = ["Saffron is the most expensive spice by weight.", "It comes from crocus flowers."]


def write_mixed_folder(folder: Path) -> list[str]:
    """A folder with one file of each kind indexed (txt, md, html, pdf, docx, jsonl, tsv); their paths."""
    for name, text in MIXED_FOLDER.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    write_pdf(folder / "comet.pdf", PDF_LINES, title="Halley's Comet")
    write_docx(folder / "spice.docx", DOCX_PARAGRAPHS, title="Saffron")
    return sorted([*MIXED_FOLDER, "comet.pdf", "spice.docx"])
