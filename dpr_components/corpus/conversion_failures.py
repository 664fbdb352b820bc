"""Why a converter skipped a folder's file: Haystack's converters log a warning naming the source and go
on without it (an unreadable PDF, a broken archive). A filter on their loggers keeps the reason for each
file of a folder (known by its path and content hash in the source's meta) until the step after the
converters reports it in one line, and keeps the warning itself, which prints the source's bytes, off
the console. Warnings about anything else pass through untouched."""

from __future__ import annotations

import logging
import threading

from dpr_components.corpus.folder_files import HASH_KEY, PATH_KEY

CONVERTER_LOGGERS = {
    "haystack.components.converters.txt": "text",
    "haystack.components.converters.markdown": "Markdown",
    "haystack.components.converters.html": "HTML",
    "haystack.components.converters.pypdf": "PDF",
    "haystack.components.converters.docx": "Word",
    "haystack_integrations.components.converters.dpr.corpus_file_to_document": "corpus file",
}
MAX_REASON_CHARS = 300
_reasons: dict[tuple[str, str], str] = {}
_lock = threading.Lock()
_installed: list[logging.Filter] = []


class _FolderFileFailures(logging.Filter):
    """Keeps the reason of a warning about a folder's file, and drops the warning."""

    def filter(self, record: logging.LogRecord) -> bool:
        meta = getattr(getattr(record, "source", None), "meta", None)
        if not isinstance(meta, dict) or not isinstance(meta.get(PATH_KEY), str) or HASH_KEY not in meta:
            return True
        with _lock:
            _reasons.setdefault((meta[PATH_KEY], str(meta[HASH_KEY])), _reason(record))
        return False


def _reason(record: logging.LogRecord) -> str:
    """The end of the line naming the file: what the converter could not do, in its own words."""
    kind = CONVERTER_LOGGERS.get(record.name, "file")
    error = getattr(record, "error", None)
    if error is None:
        return f"the {kind} converter found no text in it"
    words = " ".join(str(error).split()) or type(error).__name__
    if len(words) > MAX_REASON_CHARS:
        words = f"{words[:MAX_REASON_CHARS]}..."
    if kind == "PDF" and "decrypt" in words.lower():
        return f"the PDF is encrypted and cannot be read without its password ({words})"
    if kind == "corpus file":
        return words  # the corpus reader's message names the line
    return f"the {kind} converter could not read it: {words}"


def capture_converter_failures() -> None:
    """Put the filter on the converters' loggers (once per process)."""
    with _lock:
        if _installed:
            return
        failures = _FolderFileFailures()
        for name in CONVERTER_LOGGERS:
            logging.getLogger(name).addFilter(failures)
        _installed.append(failures)
        # pypdf warns of each flaw it finds ("EOF marker not found") beside the converter's warning kept above;
        # the file's one line says what matters, so pypdf's own warnings stay off the console
        pypdf = logging.getLogger("pypdf")
        if pypdf.level == logging.NOTSET:
            pypdf.setLevel(logging.ERROR)


def failure_reason(path: str, content_hash: str) -> str | None:
    """The reason kept for the file at ``path`` with that hash (forgotten once asked for), or ``None``."""
    with _lock:
        return _reasons.pop((path, content_hash), None)
