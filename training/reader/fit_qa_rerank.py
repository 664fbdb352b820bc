"""Choose how ``pipelines/qa_rerank.yml`` turns re-ranked passages into an answer, on the selection
splits, by exact match end to end.

    python -m training.reader.fit_qa_rerank \\
        --questions data/selection/squad-train-selection.jsonl,data/selection/nq-train-selection.jsonl \\
        --store indexes/pool --out docs/training/selection/qa-rerank

For each question the hybrid's top 20 (``pipelines/qa_rerank.yml``'s settings) are read once by each
candidate reader (every passage: its selection probability and its best span), and once by the
ranker; every decoding is then scored from those numbers without reading again. NQ train's answers
are long-answer spans: only its questions with an answer of at most five words are scored (NQ-open's
own rule for short answers), against those answers.

``--candidate FOLDER:MAX_LENGTH`` adds a third span reader to the grid (e.g. one trained to read after
the ranker):

    python -m training.reader.fit_qa_rerank --questions ... --candidate runs/span/export:192 --out runs/span/qa-rerank

A decoding reads the best ``k`` passages of the re-ranked order and scores each passage's best span as
``a·log P_reader(passage) + log P(span) + γ·(ranker score) − α·log(rank)``; the one with the best mean
exact match over the splits (each weighted equally) wins. Reports every split with 95% bootstrap
intervals and paired differences from ``pipelines/qa_fast.yml``'s decoding (the hybrid's top 10 read by
the reader with its rank prior)."""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from dpr_components.evaluation.answer_metrics import exact_match
from dpr_components.evaluation.intervals import paired_bootstrap_difference, score_interval
from dpr_components.evaluation.metric_intervals import difference_cell, interval_cell
from dpr_components.evaluation.questions import load_questions
from dpr_components.evaluation.tables import markdown_table, produced_by
from dpr_components.evaluation.templates import fill_template, sibling_template
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.utils.validation import model_and_max_length
from haystack_integrations.components.readers.dpr.span_reader import SpanReader
from training.common.report_folder import add_report_options, measured_summary, write_report_folder

QA_RERANK = Path(__file__).resolve().parents[1] / "pipelines" / "qa_rerank.yml"
CANDIDATES = 20
SHORT_ANSWER_WORDS = 5
# the settings pipelines/qa_fast.yml and qa_rerank.yml ship with
QA_LENGTH_PENALTY = 0.3
RERANK_WEIGHT = 0.75
TEMPLATE = sibling_template(__file__, "fit_qa_rerank.md.template")


@dataclass(frozen=True)
class Decoding:
    """Which passages are read and how a passage's best span is scored (see the module docstring)."""

    reader: str
    order: str  # "hybrid" or "reranked"
    passages: int
    selection_weight: float  # a
    ranker_weight: float  # γ
    rank_prior: float  # α

    def label(self) -> str:
        return (
            f"{self.reader}, {self.order} top {self.passages}, a={self.selection_weight:g}, "
            f"γ={self.ranker_weight:g}, α={self.rank_prior:g}"
        )


QA_DEFAULT = Decoding("reader", "hybrid", 10, 1.0, 0.0, 1.0)
QA_RERANK_SHIPPED = Decoding("reader", "reranked", 10, 1.0, 0.0, 1.0)
# where a gain comes from: qa_fast.yml's decoding with the ranker's folder reading (no re-ranking)
QA_RANKER_READING = Decoding("ranker", "hybrid", 10, 1.0, 0.0, 1.0)


def short_answers(answers: list[str], limit: int | None) -> list[str]:
    """The answers of at most ``limit`` words (all of them without a limit)."""
    return [a for a in answers if limit is None or len(a.split()) <= limit]


def read_all(reader: SpanReader, question: str, documents: list[Any], golds: list[str]) -> dict[str, list[Any]]:
    """Per document, in columns: its selection probability (over all ``documents``, as a log), its best
    span's log probability and that span's exact match; ``None`` logs for a document without a span.
    The span's text is not kept: the reports hold numbers only."""
    answers = reader.run(query=question, documents=documents, top_k=len(documents))["answers"]
    by_id = {a.document.id: a for a in answers}
    columns: dict[str, list[Any]] = {"log_p": [], "log_span": [], "em": []}
    for d in documents:
        a = by_id.get(d.id)
        found = a is not None and bool(a.data)
        columns["log_p"].append(round(math.log(max(a.meta["passage_score"], 1e-300)), 5) if found else None)
        columns["log_span"].append(round(math.log(max(a.meta["span_probability"], 1e-300)), 5) if found else None)
        columns["em"].append(exact_match(a.data, golds) if found else 0.0)
    return columns


def collect_split(
    path: str, limit: int | None, hybrid: Any, readers: dict[str, SpanReader], most: int | None = None
) -> dict[str, Any]:
    """Per question of ``path`` with a short enough answer (the first ``most``): the hybrid's top 20
    (scores) and every reader's reading of each passage, with each span's exact match."""
    rows: list[dict[str, Any]] = []
    for q in tqdm(load_questions(path), desc=f"reading {Path(path).name}", unit="q"):
        golds = short_answers(list(q.answers), limit)
        if not golds:
            continue
        if most is not None and len(rows) == most:
            break
        documents = hybrid.run(query=q.question)["documents"][:CANDIDATES]
        row: dict[str, Any] = {"retrieval": [round(float(d.score), 5) for d in documents]}
        for name, reader in readers.items():
            row[name] = read_all(reader, q.question, documents, golds)
        rows.append(row)
    return {"file": path, "answer_word_limit": limit, "questions": rows}


def _log(value: float | None) -> float:
    """A stored log probability; ``None`` (no span in the passage) is log 0."""
    return -math.inf if value is None else value


def reranked_order(row: dict[str, Any]) -> list[int]:
    """The hybrid's top 20 ordered by ranker logit + 0.75 × hybrid score (as ``qa_rerank.yml``); ties keep
    the hybrid's order."""
    fused = [_log(p) + RERANK_WEIGHT * s for p, s in zip(row["ranker"]["log_p"], row["retrieval"], strict=True)]
    return sorted(range(len(fused)), key=lambda i: -fused[i])


def decoded_em(rows: list[dict[str, Any]], decoding: Decoding) -> np.ndarray:
    """Exact match of each question's best answer under ``decoding``."""
    out = np.zeros(len(rows))
    for n, row in enumerate(rows):
        order = reranked_order(row) if decoding.order == "reranked" else list(range(len(row["retrieval"])))
        read = order[: decoding.passages]
        readings, ranker = row[decoding.reader], row["ranker"]
        best, best_em = -math.inf, 0.0
        for rank, i in enumerate(read, start=1):
            log_p, log_span = readings["log_p"][i], readings["log_span"][i]
            if log_span is None:
                continue
            fused = _log(ranker["log_p"][i]) + RERANK_WEIGHT * row["retrieval"][i]
            score = (
                decoding.selection_weight * log_p
                + log_span
                + decoding.ranker_weight * fused
                - decoding.rank_prior * math.log(rank)
            )
            if score > best:
                best, best_em = score, readings["em"][i]
        out[n] = best_em
    return out


def first_passage_em(rows: list[dict[str, Any]], reader: str, order: str) -> float:
    """Exact match of the best span of the passage ranked first (``hybrid`` or ``reranked``), in percent."""
    first = [reranked_order(row)[0] if order == "reranked" else 0 for row in rows]
    return 100 * float(np.mean([row[reader]["em"][i] for row, i in zip(rows, first, strict=True)]))


def oracle_em(rows: list[dict[str, Any]], reader: str, passages: int) -> float:
    """Exact match when the best of the hybrid's first ``passages`` passages' best spans is always picked (%)."""
    return 100 * float(np.mean([max(row[reader]["em"][:passages]) for row in rows]))


def grid(readers: list[str]) -> list[Decoding]:
    return [
        Decoding(reader, "reranked", k, a, g, alpha)
        for reader, k, a, g, alpha in itertools.product(
            readers, (1, 3, 5, 10, 20), (0.0, 0.5, 1.0), (0.0, 0.25, 0.5, 1.0, 2.0, 4.0), (0.0, 0.5, 1.0, 2.0)
        )
    ]


def choose(splits: list[dict[str, Any]], decodings: list[Decoding]) -> tuple[Decoding, dict[Decoding, float]]:
    """The decoding with the best mean exact match over the splits (the first of the grid on ties)."""
    means = {d: float(np.mean([decoded_em(s["questions"], d).mean() for s in splits])) for d in decodings}
    best = max(means.values())
    return next(d for d in decodings if means[d] == best), means


def split_section(split: dict[str, Any], shown: list[tuple[str, Decoding]], candidate: bool) -> list[str]:
    """One selection split: the shown decodings' EM against qa_fast.yml's, then the ceilings."""
    rows = split["questions"]
    reference = decoded_em(rows, QA_DEFAULT) * 100
    body = []
    for label, decoding in shown:
        hits = decoded_em(rows, decoding)
        em = hits * 100
        diff = "" if decoding == QA_DEFAULT else difference_cell(paired_bootstrap_difference(em, reference))
        body.append([label, decoding.label(), interval_cell(score_interval(hits).scaled(100), name_method=True), diff])
    lines = [f"## {split['file']} ({len(rows)} questions)", ""]
    lines += [*markdown_table(["decoding", "settings", "EM", "EM − qa_fast.yml"], body, "llrr"), ""]
    lines += [
        "Ceilings and where the answer comes from (EM, %): the best span of the passage ranked first, "
        f"in the hybrid's order {first_passage_em(rows, 'reader', 'hybrid'):.1f}, re-ranked "
        f"{first_passage_em(rows, 'reader', 'reranked'):.1f} (reader; ranker's folder "
        f"{first_passage_em(rows, 'ranker', 'hybrid'):.1f} and {first_passage_em(rows, 'ranker', 'reranked'):.1f}); "
        "always the right one of the best spans of the hybrid's top 10 (an oracle) "
        f"{oracle_em(rows, 'reader', 10):.1f} (ranker's folder {oracle_em(rows, 'ranker', 10):.1f}"
        + (
            f"; candidate: re-ranked first {first_passage_em(rows, 'candidate', 'reranked'):.1f}, "
            f"oracle {oracle_em(rows, 'candidate', 10):.1f})."
            if candidate
            else ")."
        ),
        "",
    ]
    return lines


def render(summary: dict[str, Any], chosen: Decoding, means: dict[Decoding, float], command: str) -> str:
    """The report: ``fit_qa_rerank.md.template`` filled with :func:`report_values`."""
    return fill_template(TEMPLATE, report_values(summary, chosen, means, command))


def report_values(
    summary: dict[str, Any], chosen: Decoding, means: dict[Decoding, float], command: str
) -> dict[str, object]:
    """The values of the report's template: settings, one section per split, the best decodings."""
    candidate = summary.get("candidate") is not None
    top = sorted(means.items(), key=lambda item: -item[1])[:15]
    shown = shown_decodings(means, chosen, candidate)
    sections = [line for split in summary["splits"] for line in split_section(split, shown, candidate)]
    return {
        "candidates": CANDIDATES,
        "store": summary["store"],
        "rerank_weight": f"{RERANK_WEIGHT:g}",
        "short_answer_words": SHORT_ANSWER_WORDS,
        "candidate_reader": (
            f"; *candidate*: {summary['candidate']} ({summary['candidate_length']} tokens)." if candidate else "."
        ),
        "decodings": len(means),
        "chosen": chosen.label(),
        "splits": "".join(f"{line}\n" for line in sections),
        "best_table": "\n".join(
            markdown_table(["settings", "mean EM"], [[d.label(), f"{100 * m:.1f}"] for d, m in top], "lr")
        ),
        "produced_by": "\n".join(produced_by(command)),
    }


def shown_decodings(means: dict[Decoding, float], chosen: Decoding, candidate: bool) -> list[tuple[str, Decoding]]:
    """The decodings each split's table shows, with their labels: qa_fast.yml's, the shipped ones, the best
    with each other reading and the chosen one."""
    shown = [
        ("qa_fast.yml (hybrid top 10, reader)", QA_DEFAULT),
        ("qa_fast.yml read by the ranker's folder", QA_RANKER_READING),
        ("qa_rerank.yml before", QA_RERANK_SHIPPED),
    ]
    for reader in ("ranker", "candidate") if candidate else ():
        best = max((d for d in means if d.reader == reader), key=lambda d: means[d])
        shown.append((f"the best with the {reader} reading", best))
    shown.append(("chosen", chosen))
    return shown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", required=True, help="comma-separated selection files")
    parser.add_argument("--store", default="indexes/pool")
    parser.add_argument("--reader", default="bundled:reader-minilm", help="the span reader (256 tokens)")
    parser.add_argument("--ranker", default="bundled:ranker-minilm", help="the ranker, also tried as reader (192)")
    parser.add_argument(
        "--candidate",
        type=model_and_max_length,
        default=None,
        metavar="MODEL:MAX_LENGTH",
        help="a third span reader to try",
    )
    parser.add_argument("--limit", type=int, default=None, help="first N questions of each file")
    add_report_options(parser)
    args = parser.parse_args(argv)

    def measure() -> dict[str, Any]:
        common = {"top_k": CANDIDATES, "ranking": "combined", "length_penalty": QA_LENGTH_PENALTY}
        readers = {
            "reader": SpanReader(model=args.reader, max_length=256, **common),
            "ranker": SpanReader(model=args.ranker, max_length=192, **common),
        }
        if args.candidate is not None:
            readers["candidate"] = SpanReader(model=args.candidate[0], max_length=args.candidate[1], **common)
        hybrid = load_pipeline(QA_RERANK, args.store, []).get_component("hybrid")
        hybrid.warm_up()
        splits = []
        for path in args.questions.split(","):
            limit = SHORT_ANSWER_WORDS if "nq" in Path(path).name else None
            splits.append(collect_split(path, limit, hybrid, readers, args.limit))
        candidate, length = args.candidate or (None, None)
        return {
            "reader": args.reader,
            "ranker": args.ranker,
            "candidate": candidate,
            "candidate_length": length,
            "store": args.store,
            "splits": splits,
        }

    summary = measured_summary(args, "training.reader.fit_qa_rerank", argv, measure)
    readers = ["reader", "ranker"] + (["candidate"] if summary.get("candidate") is not None else [])
    chosen, means = choose(summary["splits"], grid(readers))
    summary["chosen"] = asdict(chosen)
    write_report_folder(args.out, summary, render(summary, chosen, means, summary["command"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
