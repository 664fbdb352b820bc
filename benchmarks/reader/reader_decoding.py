"""The reader's length prior β on both question styles: SQuAD dev with the gold paragraph, and
nq/dev end to end with `pipelines/qa_fast.yml`'s hybrid top 10 and answer ranking.

    python -m benchmarks.reader.reader_decoding --model models/reader-minilm --store indexes/pool
        # writes docs/benchmarks/reader/reader_decoding.{md,json}

Each question's passages go through the model once; every β re-decodes the same logits (a span
of n tokens scores start + end logit − β(n−1)). `pipelines/qa_fast.yml`'s ``length_penalty`` was
chosen from this table."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from benchmarks.reader.reader_benchmark import qa_pipeline
from dpr_components.evaluation.answer_metrics import exact_match
from dpr_components.evaluation.intervals import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    Interval,
    PairedDifference,
    paired_bootstrap_difference,
    score_interval,
    wilson_interval,
)
from dpr_components.evaluation.metric_intervals import difference_cell, interval_cell
from dpr_components.evaluation.tables import table_header, table_row
from dpr_components.reader_training.data import read_jsonl
from dpr_components.readers import predict
from dpr_components.readers.model import load_reader
from dpr_components.readers.predict import ReadSettings, read
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.sources import resolve_data_source


class OneForwardPerQuestion:
    """Stands in for ``predict.row_logits`` so that decoding one question's rows again with other
    settings reuses the model's logits instead of running it again."""

    def __init__(self) -> None:
        self.original = predict.row_logits
        self.cache: dict[tuple, Any] = {}

    def __call__(self, reader: Any, rows: list, pad_id: int, batch_size: int | None, bf16: bool) -> Any:
        key = tuple(tuple(row.input_ids) for row in rows)
        if key not in self.cache:
            self.cache[key] = self.original(reader, rows, pad_id, batch_size, bf16)
        return self.cache[key]

    def __enter__(self) -> OneForwardPerQuestion:
        predict.row_logits = self
        return self

    def __exit__(self, *exc: object) -> None:
        predict.row_logits = self.original


def sweep(
    model: str,
    store: Path,
    penalties: list[float],
    limit: int | None,
    squad_file: str = "squad/dev.jsonl",
    nq_file: str = "nq/dev.jsonl",
) -> dict[str, Any]:
    """Exact match per β on ``squad_file`` (gold paragraph) and ``nq_file`` end to end ('' skips one)."""
    reader, tokenizer = load_reader(model)
    pipeline = qa_pipeline(model, store, {"precision": "auto"})
    hybrid, qa_reader = pipeline.get_component("hybrid"), pipeline.get_component("reader")
    qa = qa_reader.read_settings
    gold = {b: [] for b in penalties}
    open_domain = {b: [] for b in penalties}
    with OneForwardPerQuestion() as forward:
        squad = (
            [q for q in read_jsonl(resolve_data_source(squad_file), limit) if q.gold is not None] if squad_file else []
        )
        for q in tqdm(squad, desc=f"{squad_file}, gold paragraph", unit="q"):
            for b in penalties:
                answers = read(
                    reader,
                    tokenizer,
                    q.question,
                    [(q.gold.title, q.gold.text)],
                    bf16=qa_reader.uses_bf16,
                    settings=ReadSettings(max_answer_length=qa.max_answer_length, length_penalty=b),
                )
                gold[b].append(exact_match(answers[0].text if answers else None, q.answers))
            forward.cache.clear()
        nq = read_jsonl(resolve_data_source(nq_file), limit) if nq_file else []
        for q in tqdm(nq, desc=f"{nq_file} end to end", unit="q"):
            documents = hybrid.run(query=q.question)["documents"]
            passages = [(d.meta.get("title"), d.content or "") for d in documents]
            for b in penalties:
                settings = ReadSettings(
                    max_answer_length=qa.max_answer_length,
                    ranking=qa.ranking,
                    rank_prior=qa.rank_prior,
                    spans_per_passage=qa.spans_per_passage,
                    length_penalty=b,
                )
                answers = read(reader, tokenizer, q.question, passages, settings=settings, bf16=qa_reader.uses_bf16)
                open_domain[b].append(exact_match(answers[0].text if answers else None, q.answers))
            forward.cache.clear()
    return {
        "penalties": penalties,
        "top_k": hybrid.top_k,
        "qa_length_penalty": qa.length_penalty,
        "files": {"squad_gold": squad_file, "nq_end_to_end": nq_file},
        "squad_gold": _scores(gold, qa.length_penalty),
        "nq_end_to_end": _scores(open_domain, qa.length_penalty),
    }


def _scores(hits: dict[float, list[bool]], current: float) -> dict[str, Any]:
    """Exact match per β with its bootstrap interval, and each β's paired difference from ``current``."""
    n = len(next(iter(hits.values()), []))
    if not n:
        return {"n": 0}
    values = {b: np.asarray(v, dtype=float) * 100 for b, v in hits.items()}
    intervals = {str(b): score_interval(v / 100).scaled(100) for b, v in values.items()}
    differences = {
        str(b): paired_bootstrap_difference(v, values[current]) for b, v in values.items() if current in values
    }
    return {
        "n": n,
        "exact_match": {b: i.estimate for b, i in intervals.items()},
        "interval": {b: [i.low, i.high] for b, i in intervals.items()},
        "difference_from_pipeline": {
            b: [d.interval.estimate, d.interval.low, d.interval.high] for b, d in differences.items()
        },
    }


def _cell(part: dict[str, Any], b: float) -> str:
    """EM with its interval, then (for β other than the pipeline's) the paired difference and verdict."""
    low, high = part["interval"][str(b)]
    cell = interval_cell(Interval(part["exact_match"][str(b)], low, high, DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES))
    difference = part["difference_from_pipeline"].get(str(b))
    if difference and difference[0] != 0:
        paired = PairedDifference(Interval(*difference, DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES), float("nan"))
        cell += f"; {difference_cell(paired)}"
    return cell


def _wilson_cell(part: dict[str, Any], b: float) -> str:
    """EM with its Wilson interval, for results stored before per-question scores were kept."""
    interval = wilson_interval(part["exact_match"][str(b)] / 100, part["n"]).scaled(100)
    return interval_cell(interval) + "ʷ"


def render(result: dict[str, Any], command: str) -> str:
    penalties = result["penalties"]
    files = result.get("files", {"squad_gold": "squad/dev.jsonl", "nq_end_to_end": "nq/dev.jsonl"})
    rows, wilson = [], False
    for part, label in (("squad_gold", "gold paragraph"), ("nq_end_to_end", "end to end")):
        scores = result[part]
        if not scores.get("n"):
            continue
        cell = _cell if "interval" in scores else _wilson_cell
        wilson = wilson or cell is _wilson_cell
        rows.append(table_row([f"{files[part]}, {label} ({scores['n']:,})", *(cell(scores, b) for b in penalties)]))
    notes = (
        [
            "ʷ This result kept only each exact match and its number of questions: the interval is Wilson's "
            "(Wilson 1927) instead of a bootstrap over questions, and differences between β are not tested. "
            "It was made before the selection protocol, on the dev sets that chose β; "
            "docs/training/selection/reader-decoding/ checks β on the SQuAD selection split. Re-rendered from the JSON by `python -m benchmarks.reader.reader_decoding --from-json`.",
            "",
        ]
        if wilson
        else []
    )
    return "\n".join(
        [
            "# Span reader: the length prior β on both question styles",
            "",
            f"Produced by: `{command}`",
            "",
            "Exact match (%) of the reader's answer for each β (a span of n tokens scores start + end logit − β(n−1); "
            "β = 0 is DPR's decoding), with its 95% interval over questions and, after the semicolon, the "
            f"paired difference from the pipeline's β = {result['qa_length_penalty']:g} (*gain*/*loss* when its "
            "interval excludes zero). Gold paragraph: the only passage given. End to end: `pipelines/qa_fast.yml`'s "
            f"hybrid top {result['top_k']} and its answer ranking.",
            "",
            *table_header(["questions", *(f"β={b:g}" for b in penalties)], "l" + "r" * len(penalties)),
            *rows,
            "",
            *notes,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="models/reader-minilm")
    parser.add_argument(
        "--store", default="indexes/pool", help="the pool store (see benchmarks.reader.reader_benchmark)"
    )
    parser.add_argument("--penalties", default="0,0.1,0.2,0.3,0.5")
    parser.add_argument("--limit", type=int, help="first N questions of each dataset (smoke runs)")
    parser.add_argument(
        "--squad", default="squad/dev.jsonl", help="questions read with their gold paragraph ('' skips)"
    )
    parser.add_argument("--nq", default="nq/dev.jsonl", help="questions read end to end over the store ('' skips)")
    parser.add_argument("--out", default="docs/benchmarks/reader")
    parser.add_argument("--threads", type=int)
    parser.add_argument(
        "--from-json", action="store_true", help="render --out's reader_decoding.json again, measure nothing"
    )
    args = parser.parse_args()
    out = Path(args.out)
    if args.from_json:
        result = json.loads((out / "reader_decoding.json").read_text(encoding="utf-8"))
        atomic_write_text(out / "reader_decoding.md", render(result, result["command"]))
        return
    if args.threads:
        torch.set_num_threads(args.threads)
    command = "python -m benchmarks.reader.reader_decoding " + shlex.join(sys.argv[1:])
    penalties = [float(x) for x in args.penalties.split(",") if x.strip()]
    result = sweep(args.model, Path(args.store), penalties, args.limit, args.squad, args.nq)
    atomic_write_text(out / "reader_decoding.json", json.dumps({**result, "command": command}, indent=1) + "\n")
    atomic_write_text(out / "reader_decoding.md", render(result, command))
    print(render(result, command))


if __name__ == "__main__":
    main()
