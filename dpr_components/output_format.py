"""Turn pipeline results into readable tables or JSON (no embeddings, which are long and rarely wanted)."""

from __future__ import annotations

import json
import shutil
from typing import Any

from haystack import Document
from haystack.dataclasses import ExtractedAnswer


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
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
                {"start": value.document_offset.start, "end": value.document_offset.end} if value.document_offset else None
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


def to_json_line(result: dict[str, Any]) -> str:
    return json.dumps(to_jsonable(result), ensure_ascii=False)


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
        text = f"[{title}] {doc.content or ''}" if title else doc.content or ""
        lines.append(f"{prefix}  {_clip(text, max(width - len(prefix) - 2, 40))}")
    return "\n".join(lines)


def answers_table(answers: list[ExtractedAnswer]) -> str:
    if not answers:
        return "  (no answer)"
    lines = []
    for rank, answer in enumerate(answers, start=1):
        doc = answer.document
        title = doc.meta.get("title", "") if doc else ""
        lines.append(f"  {rank}. {answer.data!r}  (score {_score(answer.score)})")
        if doc is not None:
            lines.append(f"     from [{title}] {_clip(doc.content or '', 160)}")
            scores = {k: v for k, v in (answer.meta or {}).items() if isinstance(v, float)}
            if scores:
                lines.append("     " + "  ".join(f"{k} {v:.3f}" for k, v in scores.items()))
    return "\n".join(lines)


def result_text(result: dict[str, Any]) -> str:
    """A readable rendering of ``Pipeline.run`` output: one block per component output."""
    blocks = []
    for component, outputs in result.items():
        for name, value in outputs.items():
            if name == "query_embedding":
                continue
            if isinstance(value, list) and value and all(isinstance(v, Document) for v in value) or (
                isinstance(value, list) and not value and name == "documents"
            ):
                blocks.append(f"{component}.{name}:\n{documents_table(value)}")
            elif isinstance(value, list) and all(isinstance(v, ExtractedAnswer) for v in value):
                blocks.append(f"{component}.{name}:\n{answers_table(value)}")
            else:
                blocks.append(f"{component}.{name}: {json.dumps(to_jsonable(value), ensure_ascii=False)}")
    return "\n".join(blocks)
