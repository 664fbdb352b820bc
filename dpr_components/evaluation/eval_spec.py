"""The ``metadata.evaluation`` section of an evaluation pipeline file (e.g. ``pipelines/eval_nq.yml``).

    metadata:
      evaluation:
        questions: ${DPR_DATA_DIR}/nq/dev.jsonl   # the only variable expanded; default ../shared/data
        top_k: 100
        systems: {bm25: bm25.yml, dense: dense.yml, hybrid: search.yml}   # relative to this file's folder

Haystack keeps ``metadata`` with the pipeline and ignores it otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpr_components.utils.settings import DATA_DIR_ENV, data_dir

DATA_DIR_VARIABLE = "${" + DATA_DIR_ENV + "}"
_KEYS = {"questions", "top_k", "systems", "split"}


@dataclass
class EvaluationSpec:
    """Defaults an evaluation pipeline carries for ``haystack eval``; command-line options override them."""

    questions: str | None = None
    split: str | None = None
    top_k: int | None = None
    systems: dict[str, str] = field(default_factory=dict)


def expand_data_dir(text: str) -> str:
    """Replace ``${DPR_DATA_DIR}`` (and nothing else: no other variable is read) by the data folder."""
    return text.replace(DATA_DIR_VARIABLE, str(data_dir()))


def evaluation_spec(spec: Mapping[str, Any], where: str) -> EvaluationSpec:
    """Read and check ``metadata.evaluation``; a file without it gives empty defaults."""
    metadata = spec.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise ValueError(f"{where}: 'metadata' must be a mapping")
    section = metadata.get("evaluation")
    if section is None:
        return EvaluationSpec()
    if not isinstance(section, Mapping):
        raise ValueError(f"{where}: metadata.evaluation must be a mapping")
    unknown = set(section) - _KEYS
    if unknown:
        raise ValueError(f"{where}: metadata.evaluation has unknown keys {sorted(unknown)}; known: {sorted(_KEYS)}")
    questions = section.get("questions")
    if questions is not None and not isinstance(questions, str):
        raise ValueError(f"{where}: metadata.evaluation.questions must be a path or dataset name")
    split = section.get("split")
    if split is not None and not isinstance(split, str):
        raise ValueError(f"{where}: metadata.evaluation.split must be text")
    top_k = section.get("top_k")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k <= 0):
        raise ValueError(f"{where}: metadata.evaluation.top_k must be a positive integer, got {top_k!r}")
    systems = section.get("systems") or {}
    if not isinstance(systems, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in systems.items()
    ):
        raise ValueError(f"{where}: metadata.evaluation.systems must map names to pipeline files")
    base = Path(where).parent
    return EvaluationSpec(
        questions=expand_data_dir(questions) if questions else None,
        split=split,
        top_k=top_k,
        systems={name: str(base / path) for name, path in systems.items()},
    )


def is_evaluation_spec(spec: Mapping[str, Any]) -> bool:
    """Whether a pipeline file is an evaluation pipeline: every component is an evaluator."""
    components = spec.get("components") or {}
    return bool(components) and all(
        isinstance(data, Mapping) and str(data.get("type", "")).rsplit(".", 1)[-1].endswith("Evaluator")
        for data in components.values()
    )
