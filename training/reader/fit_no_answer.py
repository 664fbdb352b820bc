"""Fit the "no answer" of a packaged QA pipeline's reader and choose its score threshold, on questions
held aside from training; or, with ``--calibration-from``, only measure a fitted one (dev, once).

    python -m training.reader.fit_no_answer --pipeline qa --store indexes/pool \\
        --questions data/selection/nq-train-selection.jsonl,data/selection/squad-train-selection.jsonl \\
        --out docs/training/selection/no-answer-qa
    python -m training.reader.fit_no_answer --pipeline qa --store indexes/pool \\
        --questions ../shared/data/nq/dev.jsonl,../shared/data/squad/dev.jsonl \\
        --calibration-from docs/training/selection/no-answer-qa --out docs/training/no-answer-dev-qa

Every question is asked twice: as it is (answerable) and with every passage that holds an answer
taken out of what the first stage retrieved (unanswerable by construction: passages from the gold
documents, and any other passage containing an answer string, are removed before the pipeline reads
the rest). The reader's no-answer features of each reading (``dpr_components/readers/no_answer.py``)
and the top answer's exact match are kept. A logistic model of "the passages the reader read hold no
answer" is fitted on them; the threshold on P(no answer) is the one that says "no answer" to the most
unanswerable questions among those that cost the answerable ones at most ``--max-em-drop`` points of
exact match (default 1: well inside the 95% interval, so that the default pipelines can say "no answer"
without losing their exact match). NQ train's answers are long spans: only its questions with an answer
of at most five words are used (NQ-open's rule), as training/reader/fit_qa_rerank.py does.

``--readings-from`` takes the readings of an earlier report of this script (its features do not depend on
any calibration) instead of reading again: a new threshold rule or calibration costs seconds, not an hour."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from dpr_components.evaluation.answer_matching import has_answer
from dpr_components.evaluation.answer_metrics import exact_match
from dpr_components.evaluation.questions import QAExample, load_questions
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.readers.no_answer import FEATURES, AnswerSettings, NoAnswerModel, fit_no_answer
from dpr_components.utils.sources import resolve_data_source
from haystack_integrations.components.readers.dpr.span_reader import SpanReader
from training.common.report_folder import add_report_options, measured_summary, write_report_folder
from training.reader.fit_qa_rerank import SHORT_ANSWER_WORDS, short_answers
from training.reader.no_answer_report import outcomes, render

EXTRA_CANDIDATES = 30  # retrieved beyond the first stage's top_k, so that removing answers leaves enough
THRESHOLDS = [round(t, 3) for t in np.linspace(0.3, 1.0, 71)]
READ_ALL = 1000  # answers asked of the reader: more than the passages any packaged pipeline reads
ZERO_MODEL = {**dict.fromkeys(FEATURES, 0.0), "bias": 0.0}  # P = 0.5 for all: the features are what is kept


class ReadingPipeline:
    """A packaged QA pipeline cut after its first stage: retrieve, optionally remove passages, read the rest."""

    def __init__(self, pipeline: str, store: str) -> None:
        self.pipeline = load_pipeline(pipeline, store=store)
        readers = [name for name, c in self.pipeline.walk() if isinstance(c, SpanReader)]
        if len(readers) != 1:
            raise ValueError(f"{pipeline}: expected one SpanReader, found {readers}")
        self.reader_name = readers[0]
        self.reader: SpanReader = self.pipeline.get_component(self.reader_name)
        # the features of every reading, whatever the pipeline's own calibration: P(no answer) is ours to fit
        self.reader.answer_settings = AnswerSettings.checked(True, ZERO_MODEL)
        # a span of every passage read (one span per passage), so that "the passages read hold an answer" is
        # judged on all of them, not only on those of the pipeline's top answers; the first answer is unchanged
        self.reader.top_k = READ_ALL
        self.head = next(name for name, _ in self.pipeline.walk())
        self.first_stage = self.pipeline.remove_component(self.head)
        self.top_k: int = self.first_stage.top_k

    def retrieve(self, question: str) -> list[Any]:
        return self.first_stage.run(query=question, top_k=self.top_k + EXTRA_CANDIDATES)["documents"]

    def read(self, question: str, documents: list[Any]) -> dict[str, Any]:
        """The reader's no-answer features, the top answer and the passages the reader read."""
        result = self.pipeline.run({"query": question, "documents": documents[: self.top_k]})
        answers = result[self.reader_name]["answers"]
        no_answer = next(a for a in answers if a.data is None)
        spans = [a for a in answers if a.data is not None]
        read = {a.document.id: a.document for a in spans}
        features = no_answer.meta.get("features")  # none when no passage was left to read: "no answer" for certain
        return {
            "features": None if features is None else [round(float(features[name]), 5) for name in FEATURES],
            "answer": spans[0].data if spans else None,
            "read": list(read.values()),
        }


def _holds_answer(document: Any, example: QAExample, golds: list[str]) -> bool:
    gold_document = document.meta.get("document_id") in set(example.gold_ids)
    return gold_document or has_answer(golds, document.content or "")


def _record(reading: dict[str, Any], example: QAExample, golds: list[str], kind: str) -> dict[str, Any]:
    return {
        "kind": kind,
        "features": reading["features"],
        "holds_answer": any(_holds_answer(d, example, golds) for d in reading["read"]),
        "em": exact_match(reading["answer"], golds) if reading["answer"] else 0.0,
    }


def collect(path: str, limit: int | None, reading: ReadingPipeline) -> dict[str, Any]:
    """Both versions of each question of ``path`` (the first ``limit`` with a short enough answer)."""
    rows: list[dict[str, Any]] = []
    for example in tqdm(load_questions(resolve_data_source(path)), desc=f"reading {Path(path).name}", unit="q"):
        golds = short_answers(list(example.answers), SHORT_ANSWER_WORDS)
        if not golds:
            continue
        if limit is not None and len(rows) == 2 * limit:
            break
        retrieved = reading.retrieve(example.question)
        answerable = reading.read(example.question, retrieved)
        rows.append(_record(answerable, example, golds, "answerable"))
        without = [d for d in retrieved if not _holds_answer(d, example, golds)]
        rows.append(_record(reading.read(example.question, without), example, golds, "unanswerable"))
    return {"file": path, "questions": rows}


def choose_threshold(rows: list[dict[str, Any]], model: NoAnswerModel, max_em_drop: float) -> float:
    """The threshold saying "no answer" to the most unanswerable questions whose answerable exact match is at
    most ``max_em_drop`` points under always answering (the highest such threshold on a tie)."""
    always = float(outcomes(rows, model, 1.0)["em_always"].mean())
    allowed = [t for t in THRESHOLDS if 100 * (always - float(outcomes(rows, model, t)["em"].mean())) <= max_em_drop]
    return max(allowed, key=lambda t: (float(outcomes(rows, model, t)["abstains"].mean()), t))  # 1.0 always is


def _readings(args: argparse.Namespace) -> tuple[list[dict[str, Any]], str | None]:
    """The readings of every question file (read now, or taken from ``--readings-from``) and the command
    that read them when they were taken from a report."""
    if args.readings_from:
        earlier = json.loads((Path(args.readings_from) / "report.json").read_text(encoding="utf-8"))
        return earlier["splits"], earlier.get("read_by") or earlier.get("command")
    if not args.questions:
        raise SystemExit("give --questions (or --readings-from an earlier report)")
    reading = ReadingPipeline(args.pipeline, args.store)
    return [collect(path, args.limit, reading) for path in args.questions.split(",")], None


def measure(args: argparse.Namespace) -> dict[str, Any]:
    splits, read_by = _readings(args)
    rows = [row for split in splits for row in split["questions"]]
    if args.calibration_from:
        chosen = json.loads((Path(args.calibration_from) / "report.json").read_text(encoding="utf-8"))
        model, threshold = NoAnswerModel.from_dict(chosen["calibration"]), float(chosen["threshold"])
    else:
        read = [row for row in rows if row["features"] is not None]
        features = np.array([row["features"] for row in read], dtype=np.float64)
        model = fit_no_answer(features, np.array([not row["holds_answer"] for row in read]))
        threshold = choose_threshold(rows, model, args.max_em_drop)
    return {
        "pipeline": args.pipeline,
        "splits": splits,
        "calibration": model.to_dict(),
        "threshold": threshold,
        "max_em_drop": None if args.calibration_from else args.max_em_drop,
        "fitted_here": not args.calibration_from,
        **({"read_by": read_by} if read_by else {}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipeline", default="qa", help="a packaged QA pipeline name or YAML file")
    parser.add_argument("--store", default="indexes/pool")
    parser.add_argument("--questions", help="comma-separated question files (with gold_ids)")
    parser.add_argument("--limit", type=int, help="questions per file (each asked twice)")
    parser.add_argument("--calibration-from", help="a report folder of this script: measure its calibration only")
    parser.add_argument("--readings-from", help="a report folder of this script: its readings instead of reading")
    parser.add_argument(
        "--max-em-drop", type=float, default=1.0, help="answerable exact match points the threshold may cost"
    )
    add_report_options(parser)
    args = parser.parse_args(argv)
    summary = measured_summary(args, "training.reader.fit_no_answer", argv, lambda: measure(args))
    write_report_folder(args.out, summary, render(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
