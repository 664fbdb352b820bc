"""Turn pipeline results into readable tables or JSON (no embeddings, which are long and rarely wanted).

Text from a corpus reaches the terminal, so everything a table prints goes through
:func:`printable`: control characters (escape sequences that clear the screen, set the window
title or hide links, carriage returns that overwrite a line) and bidirectional overrides (which
reorder what is shown) are printed as visible escapes such as ``\\x1b`` instead of acting."""

from __future__ import annotations

import json
import math
import re
import shutil
import sys
import unicodedata
from collections.abc import Iterable
from typing import Any

from haystack import Document
from haystack.dataclasses import ExtractedAnswer

# Bidirectional embeddings, overrides and isolates, and the marks that steer them.
_BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
# Characters JSON leaves unescaped that a terminal still acts on: DEL, C1 controls, line and
# paragraph separators, bidi controls.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029" + _BIDI_CONTROLS + "]")


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` safe to print on a terminal: tabs and line breaks become spaces, other control
    and bidi characters become visible escapes."""
    out = []
    for char in text:
        if char in "\t\n\r\v\f\x85\u2028\u2029":
            out.append(" ")
        elif unicodedata.category(char) == "Cc" or char in _BIDI_CONTROLS:
            out.append(_escape(char))
        else:
            out.append(char)
    return "".join(out)


def _clip(text: str, width: int) -> str:
    text = " ".join(printable(text).split())
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def to_jsonable(value: Any) -> Any:
    if isinstance(value, Document):
        return {"id": value.id, "score": value.score, "content": value.content, "meta": value.meta}
    if isinstance(value, ExtractedAnswer):
        return {
            "data": value.data,
            "score": value.score,
            "query": value.query,
            "document": to_jsonable(value.document) if value.document else None,
            "document_offset": (
                {"start": value.document_offset.start, "end": value.document_offset.end}
                if value.document_offset
                else None
            ),
            "meta": value.meta,
        }
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items() if k != "query_embedding"}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _non_finite_path(value: Any, where: str) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return where
    items: Iterable[tuple[Any, Any]]
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, child in items:
        found = _non_finite_path(child, f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]")
        if found:
            return found
    return None


def to_json_line(result: dict[str, Any]) -> str:
    """One line of strict JSON; a NaN or infinite number in the result is an error naming where it is."""
    data = to_jsonable(result)
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except ValueError:
        where = _non_finite_path(data, "result") or "the result"
        raise ValueError(f"{where} is not a finite number, which JSON cannot represent") from None
    return _JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _score(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def documents_table(documents: list[Document]) -> str:
    if not documents:
        return "  (no documents)"
    width = max(shutil.get_terminal_size((120, 20)).columns, 80)
    extra = any("bm25_score" in d.meta for d in documents)
    lines = []
    header = f"  {'#':>3}  {'score':>9}" + (f"  {'bm25':>8}  {'dense':>8}" if extra else "") + "  title / passage"
    lines.append(header)
    for rank, doc in enumerate(documents, start=1):
        title = doc.meta.get("title") or ""
        prefix = f"  {rank:>3}  {_score(doc.score):>9}"
        if extra:
            prefix += f"  {_score(doc.meta.get('bm25_score')):>8}  {_score(doc.meta.get('dense_score')):>8}"
        text = f"[{title}] {doc.content or ''}" if title else doc.content or ""  # _clip makes it printable
        lines.append(f"{prefix}  {_clip(text, max(width - len(prefix) - 2, 40))}")
    return "\n".join(lines)


def answers_table(answers: list[ExtractedAnswer]) -> str:
    if not answers:
        return "  (no answer)"
    lines = []
    for rank, answer in enumerate(answers, start=1):
        doc = answer.document
        title = doc.meta.get("title", "") if doc else ""
        if answer.data is None:  # a reader's "no answer", ranked by its probability
            lines.append(f"  {rank}. (no answer: the passages may not hold one)  (probability {_score(answer.score)})")
            continue
        lines.append(f"  {rank}. {printable(repr(answer.data))}  (score {_score(answer.score)})")
        if doc is not None:
            lines.append(f"     from [{_clip(str(title), 80)}] {_clip(doc.content or '', 160)}")
            scores = {k: v for k, v in (answer.meta or {}).items() if isinstance(v, float)}
            if scores:
                lines.append("     " + "  ".join(f"{printable(str(k))} {v:.3f}" for k, v in scores.items()))
    return "\n".join(lines)


def result_text(result: dict[str, Any]) -> str:
    """A readable rendering of ``Pipeline.run`` output: one block per component output."""
    blocks = []
    for component, outputs in result.items():
        for name, value in outputs.items():
            if name == "query_embedding":
                continue
            if (isinstance(value, list) and value and all(isinstance(v, Document) for v in value)) or (
                isinstance(value, list) and not value and name == "documents"
            ):
                blocks.append(f"{printable(component)}.{printable(name)}:\n{documents_table(value)}")
            elif isinstance(value, list) and all(isinstance(v, ExtractedAnswer) for v in value):
                blocks.append(f"{printable(component)}.{printable(name)}:\n{answers_table(value)}")
            else:
                text = json.dumps(to_jsonable(value), ensure_ascii=False)
                blocks.append(f"{printable(component)}.{printable(name)}: {printable(text)}")
    return "\n".join(blocks)


def report_line(line: str) -> None:
    """A progress line of a long command, on the error stream (the results keep standard output)."""
    print(line, file=sys.stderr, flush=True)
