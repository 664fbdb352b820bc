"""Where the QA pipelines' first answers go wrong: each question's first answer classed as correct, the
answer missing from every passage the reader read, or (the answer in a read passage) "no answer", a
span too long or too short, a partly overlapping span or another span; with the rank of the first read
passage holding a gold answer and whether the predicted span came from it.

Questions and pipelines as in ``benchmarks.reader.qa_pipelines`` (NQ ones only with an answer of at most
five words). Exact match and F1 use SQuAD normalisation; a passage holds an answer by DPR's rule
(``has_answer``). The report keeps numbers only, never a question's, answer's or passage's text. Writes
docs/benchmarks/reader/reader_errors.{md,json}.

    python -m benchmarks.reader.reader_errors --store indexes/pool --limit 250 \\
        --pipeline qa --pipeline qa_rerank
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from benchmarks.reader.qa_pipelines import answer_component, pipeline_parser, run_report
from dpr_components.evaluation.answer_metrics import exact_match, f1, normalize_answer
from dpr_components.evaluation.intervals import MIN_QUESTIONS, paired_bootstrap_difference, score_interval
from dpr_components.evaluation.metric_intervals import difference_cell, interval_cell
from dpr_components.evaluation.retrieval_metrics import answer_hits
from dpr_components.evaluation.tables import markdown_table
from dpr_components.evaluation.templates import fill_template, sibling_template
from dpr_components.pipeline_requests.inputs import request_inputs
from dpr_components.pipeline_requests.running import run_pipeline

MODULE = "benchmarks.reader.reader_errors"
TEMPLATE = sibling_template(__file__, "reader_errors.md.template")

ANSWER_PRESENT = (
    ("no_answer", 'said "no answer"'),
    ("too_long", "span too long"),
    ("too_short", "span too short"),
    ("partial", "partly overlapping span"),
    ("other", "other span"),
)
CLASSES = {"correct": "correct", "passage_missing": "passage missing"} | {
    key: f"answer present, {label}" for key, label in ANSWER_PRESENT
}
SPAN_ERRORS = ("too_long", "too_short", "partial", "other")
READER_ERRORS = ("no_answer", *SPAN_ERRORS)


def strictly_contains(outer: str, inner: str) -> bool:
    """Whether the normalised ``inner`` is a run of the normalised ``outer``'s words, shorter than it."""
    outer_words, inner_words = normalize_answer(outer), normalize_answer(inner)
    return bool(inner_words) and outer_words != inner_words and f" {inner_words} " in f" {outer_words} "


def classify(prediction: str | None, golds: Sequence[str], gold_ranks: Sequence[int]) -> str:
    """The class (a key of :data:`CLASSES`) of a first answer (None: "no answer"), given the ranks of the
    read passages that hold a gold answer."""
    if prediction is not None and exact_match(prediction, golds):
        return "correct"
    if not gold_ranks:
        return "passage_missing"
    if prediction is None:
        return "no_answer"
    if any(strictly_contains(prediction, gold) for gold in golds):
        return "too_long"
    if any(strictly_contains(gold, prediction) for gold in golds):
        return "too_short"
    return "partial" if f1(prediction, golds) > 0 else "other"


def feeding_component(pipeline: Any, reader: str) -> str:
    """The component whose documents the reader reads."""
    senders = [
        sender
        for sender, _, edge in pipeline.graph.in_edges(reader, data=True)
        if edge["to_socket"].name == "documents"
    ]
    if len(senders) != 1:
        raise ValueError(f"expected one component feeding {reader}.documents, found {senders}")
    return senders[0]


def read_and_answer(pipeline: Any, reader: str, feeder: str, question: str) -> tuple[list[Any], Any | None]:
    """The passages the reader was given and its first answer (None when it gave none)."""
    result = run_pipeline(pipeline, request_inputs(pipeline, query=question), include_outputs_from={feeder})
    answers = result[reader]["answers"]
    return result[feeder]["documents"], (answers[0] if answers else None)


def passage_rank(answer: Any | None, passages: Sequence[Any]) -> int | None:
    """The 1-based rank among ``passages`` of the passage the answer's span came from (None: no span)."""
    document = getattr(answer, "document", None)
    if answer is None or answer.data is None or document is None:
        return None
    ids = [passage.id for passage in passages]
    return ids.index(document.id) + 1 if document.id in ids else None


def question_record(passages: Sequence[Any], answer: Any | None, golds: Sequence[str]) -> dict[str, Any]:
    """A question's numbers: its class, the ranks of read passages holding a gold answer, the span's rank."""
    hits = answer_hits(golds, [passage.content or "" for passage in passages])
    gold_ranks = [rank for rank, hit in enumerate(hits, start=1) if hit]
    prediction = answer.data if answer is not None else None
    return {
        "class": classify(prediction, golds, gold_ranks),
        "read": len(passages),
        "gold_ranks": gold_ranks,
        "span_rank": passage_rank(answer, passages),
    }


def measure(pipelines: dict[str, Any], asked: list[tuple[str, str, list[str]]]) -> dict[str, dict[str, list]]:
    """Per pipeline and question file: one record (:func:`question_record`) per question, in order."""
    plumbing = {}
    for label, pipeline in pipelines.items():
        reader = answer_component(pipeline)
        plumbing[label] = (pipeline, reader, feeding_component(pipeline, reader))
    runs: dict[str, dict[str, list]] = {label: {} for label in pipelines}
    for path, question, golds in tqdm(asked, desc="questions", unit="question"):
        for label, (pipeline, reader, feeder) in plumbing.items():
            passages, answer = read_and_answer(pipeline, reader, feeder, question)
            runs[label].setdefault(path, []).append(question_record(passages, answer, golds))
    return runs


def indicator(records: Sequence[dict[str, Any]], classes: Sequence[str]) -> list[float]:
    """1.0 for each question whose class is among ``classes``, else 0.0."""
    return [1.0 if record["class"] in classes else 0.0 for record in records]


def answer_present(records: Sequence[dict[str, Any]]) -> list[float]:
    """1.0 for each question with a gold answer in a read passage."""
    return [1.0 if record["gold_ranks"] else 0.0 for record in records]


def share_cell(values: Sequence[float]) -> str:
    """``54.8 [48.8, 60.8]`` in percent, the interval given over at least ``MIN_QUESTIONS`` questions."""
    if not values:
        return "—"
    if len(values) < MIN_QUESTIONS:
        return f"{100 * sum(values) / len(values):.1f}"
    return interval_cell(score_interval(values).scaled(100))


def count_share(count: int, total: int) -> str:
    """``12 (4.8%)``."""
    return f"{count} ({100 * count / total:.1f}%)" if total else f"{count} (—)"


def class_rows(runs: dict[str, dict[str, list]], split: str) -> list[list[str]]:
    """Per class (and the upper bound) a row: count and % with interval for each pipeline."""
    rows = []
    for key, name in CLASSES.items():
        cells = []
        for by_split in runs.values():
            values = indicator(by_split[split], [key])
            cells += [str(int(sum(values))), share_cell(values)]
        rows.append([name, *cells])
    bound = []
    for by_split in runs.values():
        values = answer_present(by_split[split])
        bound += [str(int(sum(values))), share_cell(values)]
    rows.append(["**answer in a read passage (EM upper bound)**", *bound])
    return rows


def rank_rows(runs: dict[str, dict[str, list]], split: str) -> list[list[str]]:
    """Per rank of the first gold-holding read passage (and "none") a row of counts for each pipeline."""
    deepest = max(record["read"] for by_split in runs.values() for record in by_split[split])
    rows = []
    for rank in [*range(1, deepest + 1), None]:
        cells = []
        for by_split in runs.values():
            records = by_split[split]
            first_ranks = [record["gold_ranks"][0] if record["gold_ranks"] else None for record in records]
            cells.append(count_share(first_ranks.count(rank), len(records)))
        rows.append([str(rank) if rank is not None else "none", *cells])
    return rows


def span_source(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Of the span errors with the answer present: how many, from another passage than the first
    gold-holding one (0/1 per error), and from a passage holding no gold answer."""
    errors = [record for record in records if record["class"] in SPAN_ERRORS]
    elsewhere = [0.0 if record["span_rank"] == record["gold_ranks"][0] else 1.0 for record in errors]
    goldless = sum(1 for record in errors if record["span_rank"] not in record["gold_ranks"])
    return {"errors": len(errors), "elsewhere": elsewhere, "goldless": goldless}


def source_rows(runs: dict[str, dict[str, list]], split: str) -> list[list[str]]:
    """Per pipeline: answer-present errors, those with a span, and where the spans came from."""
    rows = []
    for label, by_split in runs.items():
        records = by_split[split]
        source = span_source(records)
        rows.append(
            [
                f"`{label}`",
                str(int(sum(indicator(records, READER_ERRORS)))),
                str(source["errors"]),
                f"{int(sum(source['elsewhere']))} ({share_cell(source['elsewhere'])})",
                count_share(source["goldless"], source["errors"]),
            ]
        )
    return rows


def split_section(runs: dict[str, dict[str, list]], split: str) -> str:
    """The three tables of one question file."""
    labels = list(runs)
    class_columns = ["first answer", *[f"{part} `{label}`" for label in labels for part in ("n", "%")]]
    rank_columns = ["rank of the first gold-holding read passage", *[f"`{label}`" for label in labels]]
    source_columns = [
        "pipeline",
        'answer-present errors (with "no answer")',
        "of them with a span",
        "span from another passage than the first gold-holding one, n (%)",
        "span from a passage holding no gold answer",
    ]
    questions = len(next(iter(runs.values()))[split])
    return "\n".join(
        [
            f"### {Path(split).stem} ({questions} questions)",
            "",
            *markdown_table(class_columns, class_rows(runs, split), "l" + "rr" * len(labels)),
            "",
            *markdown_table(rank_columns, rank_rows(runs, split), "l" + "r" * len(labels)),
            "",
            *markdown_table(source_columns, source_rows(runs, split), "lrrrr"),
            "",
        ]
    )


def mean_percent(values: Sequence[float]) -> float:
    return 100 * sum(values) / len(values) if values else 0.0


def pipeline_finding(label: str, records: Sequence[dict[str, Any]]) -> str:
    """One sentence or three on one pipeline and question file, from its numbers."""
    correct = mean_percent(indicator(records, ["correct"]))
    bound = mean_percent(answer_present(records))
    missing = mean_percent(indicator(records, ["passage_missing"]))
    reader_lost = mean_percent(indicator(records, READER_ERRORS))
    largest = max(READER_ERRORS, key=lambda key: sum(indicator(records, [key])))
    source = span_source(records)
    at_first = [record for record in records if record["gold_ranks"]]
    text = (
        f"`{label}` answers {correct:.1f}% exactly; a read passage held a gold answer for {bound:.1f}% "
        f"(the exact match of a perfect reader). Retrieval loses {missing:.1f}% (no read passage holds a gold "
        f"answer), the reader {reader_lost:.1f}% with the answer at hand, most often as "
        f"{CLASSES[largest].removeprefix('answer present, ')} ({mean_percent(indicator(records, [largest])):.1f}%)."
    )
    if source["errors"]:
        text += (
            f" Of its {source['errors']} wrong spans with the answer present, {mean_percent(source['elsewhere']):.0f}% "
            f"came from another passage than the first gold-holding one, "
            f"{100 * source['goldless'] / source['errors']:.0f}% from a passage holding no gold answer."
        )
    if at_first:
        first = mean_percent([1.0 if record["gold_ranks"][0] == 1 else 0.0 for record in at_first])
        text += (
            f" Where a read passage holds the answer, the first such passage is ranked first {first:.0f}% of the time."
        )
    return text


def comparison(runs: dict[str, dict[str, list]], split: str) -> str:
    """Each further pipeline against the first: the paired difference in exact match and upper bound."""
    baseline, *others = list(runs)
    sentences = []
    for label in others:
        em = paired_bootstrap_difference(
            indicator(runs[label][split], ["correct"]), indicator(runs[baseline][split], ["correct"])
        )
        bound = paired_bootstrap_difference(answer_present(runs[label][split]), answer_present(runs[baseline][split]))
        sentences.append(
            f"`{label}` − `{baseline}` in points: exact match {difference_cell(em.scaled(100))}, "
            f"answer in a read passage {difference_cell(bound.scaled(100))}."
        )
    return " ".join(sentences)


def findings(runs: dict[str, dict[str, list]], splits: Sequence[str]) -> str:
    """The "what this says" paragraphs, one per question file, written from the numbers."""
    paragraphs = []
    for split in splits:
        parts = [pipeline_finding(label, by_split[split]) for label, by_split in runs.items()]
        if len(runs) > 1 and len(runs[next(iter(runs))][split]) >= MIN_QUESTIONS:
            parts.append(comparison(runs, split))
        paragraphs.append(f"**{Path(split).stem}.** " + " ".join(parts))
    return "\n\n".join(paragraphs)


def split_names(asked: dict[str, int]) -> list[str]:
    """The question files that had questions asked."""
    return [path for path, count in asked.items() if count]


def render(summary: dict[str, Any]) -> str:
    runs, splits = summary["runs"], split_names(summary["asked"])
    variants = "\n".join(f"- `{label}`: {spec}" for label, spec in summary["variants"].items())
    return fill_template(
        TEMPLATE,
        {
            "asked": sum(summary["asked"].values()),
            "questions": summary["questions"],
            "store": summary["store"],
            "cpu": summary["machine"]["cpu"],
            "cores": summary["machine"]["cores"],
            "variants": variants,
            "sections": "\n".join(split_section(runs, split) for split in splits),
            "findings": findings(runs, splits),
            "command": summary["command"],
        },
    )


def build_parser() -> argparse.ArgumentParser:
    return pipeline_parser(__doc__.split("\n\n")[0], "reader_errors")


def report_fields(
    _args: argparse.Namespace, pipelines: dict[str, Any], asked: list[tuple[str, str, list[str]]]
) -> dict[str, Any]:
    """What this benchmark adds to the summary: the classes' names and each pipeline's records."""
    return {"classes": CLASSES, "runs": measure(pipelines, asked)}


def main(argv: Sequence[str] | None = None) -> None:
    run_report(MODULE, argv, build_parser(), render, report_fields)


if __name__ == "__main__":
    main()
