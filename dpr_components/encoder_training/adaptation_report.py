"""The report of an adaptation run: ``adaptation.json`` and ``adaptation.md`` in its folder.

What it did (passages used, pseudo-queries made and scored, training steps), the minutes of each phase
(added up over the runs that resumed it), its settings, and how to point the search at the result."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.json_files import read_optional_json

REPORT_JSON = "adaptation.json"
REPORT_MD = "adaptation.md"
RESULT_FILE = "result.json"  # the distillation's


@dataclass
class AdaptationOutcome:
    """What one run of an adaptation did (its minutes are this run's; the report adds earlier runs')."""

    settings: dict[str, Any]
    queries: dict[str, int]
    scored: int
    passages_in_store: int
    passage_encoder: str
    question_encoder: str = ""
    scoring_minutes: float = 0.0
    training_minutes: float = 0.0
    stopped_by_time: bool = False
    training: dict[str, Any] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether every pseudo-query was scored and every training step taken."""
        return self.scored >= self.queries["pseudo_queries"] and bool(self.training.get("complete"))


def training_result(out: Path) -> dict[str, Any]:
    """Steps taken, steps in all and whether the distillation in ``out`` is complete (from its result file)."""
    result = read_optional_json(
        out / RESULT_FILE, lambda error: ValueError(f"cannot read {out / RESULT_FILE}: {error}")
    )
    if not isinstance(result, dict):
        return {"steps": 0, "total_steps": None, "complete": False}
    return {key: result.get(key) for key in ("steps", "total_steps", "complete")}


def report_data(out: Path, outcome: AdaptationOutcome, store: str) -> dict[str, Any]:
    """The report of ``outcome`` as JSON data, with the minutes of the earlier runs recorded in ``out`` added."""
    earlier = read_optional_json(
        out / REPORT_JSON, lambda error: ValueError(f"cannot read {out / REPORT_JSON}: {error}")
    )
    before = earlier.get("minutes", {}) if isinstance(earlier, dict) else {}
    runs = int(earlier.get("runs", 0)) + 1 if isinstance(earlier, dict) else 1
    scoring = float(before.get("pseudo_queries_and_scoring", 0.0)) + outcome.scoring_minutes
    training = float(before.get("training", 0.0)) + outcome.training_minutes
    return {
        "complete": outcome.complete,
        "stopped_by_time_bound": outcome.stopped_by_time,
        "runs": runs,
        "store": store,
        "passages": {"in_store": outcome.passages_in_store, **outcome.queries},
        "scored": outcome.scored,
        "training": outcome.training or {"steps": 0, "total_steps": None, "complete": False},
        "minutes": {
            "pseudo_queries_and_scoring": round(scoring, 3),
            "training": round(training, 3),
            "total": round(scoring + training, 3),
            "this_run": round(outcome.scoring_minutes + outcome.training_minutes, 3),
        },
        "question_encoder": outcome.question_encoder,
        "passage_encoder_weights": outcome.passage_encoder,
        "use": f"haystack run qa --store {store} --set hybrid.model={outcome.question_encoder}",
        "settings": outcome.settings,
    }


def report_markdown(data: dict[str, Any]) -> str:
    """``adaptation.md``: the report in a few lines and a table."""
    passages, training, minutes = data["passages"], data["training"], data["minutes"]
    state = "complete" if data["complete"] else "not complete: run the same command again to go on"
    if data["stopped_by_time_bound"]:
        state += " (stopped at the time bound)"
    total = training.get("total_steps")
    rows = [
        ("passages in the store", passages["in_store"]),
        ("passages read (seeded order)", passages["passages_read"]),
        ("skipped: too short", passages["skipped_short"]),
        ("skipped: fewer than two sentences", passages["skipped_no_sentence"]),
        ("pseudo-queries made", passages["pseudo_queries"]),
        ("pseudo-queries scored by the teacher", data["scored"]),
        ("training steps", f"{training.get('steps', 0)} of {total if total is not None else '?'}"),
        ("minutes: pseudo-queries and scoring", minutes["pseudo_queries_and_scoring"]),
        ("minutes: training", minutes["training"]),
        ("runs (resumed)", data["runs"]),
    ]
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    settings = json.dumps(data["settings"], indent=1)
    return (
        f"# Question encoder adapted to {data['store']}\n\n"
        f"State: {state}.\n\n| what | value |\n|---|---|\n{table}\n\n"
        f"The question encoder `{data['question_encoder']}` is paired with the store's passage encoder "
        f"(weights {data['passage_encoder_weights']}): the store keeps its vectors. Search with it:\n\n"
        f"```\n{data['use']}\n```\n\n(the same `--set hybrid.model=...` for `search`, `qa_fast`, `qa_rerank`; "
        "`--set dense.model=...` for `dense`). Its effect on retrieval is measured by "
        "`python -m training.retriever.adapt_report` (docs/training/adaptation.md).\n\n"
        f"## Settings\n\n```json\n{settings}\n```\n"
    )


def write_report(out: Path, outcome: AdaptationOutcome, store: str) -> dict[str, Any]:
    """Write ``adaptation.json`` and ``adaptation.md`` into ``out`` (each atomically); returns the data."""
    data = report_data(out, outcome, store)
    atomic_write_text(out / REPORT_MD, report_markdown(data))
    atomic_write_text(out / REPORT_JSON, json.dumps(data, indent=1) + "\n")
    return data
