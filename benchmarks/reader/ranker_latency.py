"""Re-ranking latency: ``PassageRanker`` on a question's 20 hybrid passages, one thread.

The questions' passages come from ``pipelines/search_rerank.yml``'s hybrid over the pool store
(retrieved once, untimed); then each model and input length re-ranks each question's passages,
the systems taking turns question by question, after a warm-up. Writes
docs/benchmarks/reader/ranker_latency.{md,json}.

    python -m benchmarks.reader.ranker_latency --store indexes/pool \\
        --ranker bundled:reader-minilm:256 --ranker bundled:ranker-minilm:192 --backends torch,openvino --one-batch --full-forward
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from benchmarks.common import REPO_ROOT, command_line, cpu_name, latency_ms, set_threads, write_report
from dpr_components.evaluation.tables import markdown_table, produced_by
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.readers.predict import passage_relevance, row_logits
from dpr_components.utils.threads import read_threads, torch_threads
from dpr_components.utils.validation import model_and_max_length
from haystack_integrations.components.rankers.dpr.passage_ranker import PassageRanker

MODULE = "benchmarks.reader.ranker_latency"
SEARCH_RERANK = REPO_ROOT / "pipelines" / "search_rerank.yml"
ONE_BATCH = 1000  # rows per forward pass above any question's: every passage in one padded batch


class FullForwardRanker(PassageRanker):
    """``PassageRanker`` running the reader's whole forward (the span logits computed and dropped), as it
    did before it computed the last layer for [CLS] alone: the peer of ``--full-forward``."""

    def _score(self, query: str, readable: list[Any]) -> list[float]:
        prepared = self._reader_input(query, readable)
        with torch_threads(read_threads()):
            logits = row_logits(self._reader, prepared.rows, prepared.pad_id, self.batch_size, self.uses_bf16)
        return passage_relevance(prepared, [relevance for _, _, relevance in logits])


def questions(path: Path, limit: int) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line)["question"] for line in handle][:limit]


def measure(
    rankers: dict[str, PassageRanker], cases: list[tuple[str, list[Any]]], warmup: int
) -> dict[str, list[float]]:
    """Seconds per question for each ranker, the rankers taking turns question by question."""
    seconds: dict[str, list[float]] = {name: [] for name in rankers}
    names = list(rankers)
    for index, (query, documents) in enumerate(cases):
        names = names[1:] + names[:1]
        for name in names:
            start = time.perf_counter()
            rankers[name].run(query=query, documents=documents)
            if index >= warmup:
                seconds[name].append(time.perf_counter() - start)
    return seconds


def build_parser() -> argparse.ArgumentParser:
    """The command's options."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default="indexes/pool")
    parser.add_argument("--questions", default="data/selection/nq-train-selection.jsonl")
    parser.add_argument("--limit", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument(
        "--ranker", type=model_and_max_length, action="append", required=True, metavar="MODEL:MAX_LENGTH"
    )
    parser.add_argument(
        "--backends", default="torch", help="comma-separated back ends each ranker runs on (torch, openvino)"
    )
    parser.add_argument(
        "--one-batch", action="store_true", help="also read each question's passages in one padded batch"
    )
    parser.add_argument(
        "--full-forward",
        action="store_true",
        help="also time each torch ranker running the reader's whole forward instead of [CLS] alone in its last layer",
    )
    parser.add_argument("--out-dir", type=Path, default=REPO_ROOT / "docs" / "benchmarks" / "reader")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    set_threads(1)
    os.environ["DPR_READ_THREADS"] = "1"
    hybrid = load_pipeline(SEARCH_RERANK, args.store, []).get_component("hybrid")
    hybrid.warm_up()
    cases = [(q, hybrid.run(query=q)["documents"]) for q in questions(Path(args.questions), args.limit)]
    batchings = [("", None)] + ([(", one padded batch", ONE_BATCH)] if args.one_batch else [])
    rankers: dict[str, PassageRanker] = {}
    for model, length in args.ranker:
        for backend in args.backends.split(","):
            name = f"{model}, {length} tokens, {backend}"
            for label, batch_size in batchings:
                rankers[name + label] = PassageRanker(
                    model=model, max_length=length, top_k=10, backend=backend, batch_size=batch_size
                )
            if args.full_forward and backend == "torch":
                rankers[name + ", whole forward"] = FullForwardRanker(model=model, max_length=length, top_k=10)
    for ranker in rankers.values():
        ranker.warm_up()
    timings = measure(rankers, cases, args.warmup)
    summary = {
        "machine": {"cpu": cpu_name(), "torch": torch.__version__, "threads": 1, "date": time.strftime("%Y-%m-%d")},
        "questions": len(cases) - args.warmup,
        "passages_per_question": sum(len(d) for _, d in cases) / len(cases),
        "rankers": {name: latency_ms(values) for name, values in timings.items()},
        "command": command_line(MODULE, list(argv) if argv is not None else sys.argv[1:]),
    }
    rows = [
        [name, f"{r['p50_ms']:.0f}", f"{r['p95_ms']:.0f}", f"{r['mean_ms']:.0f}"]
        for name, r in summary["rankers"].items()
    ]
    markdown = "\n".join(
        [
            "# Re-ranking latency: PassageRanker on one thread",
            "",
            f"{summary['questions']} questions of {args.questions} after {args.warmup} warm-up ones, "
            f"{summary['passages_per_question']:.0f} hybrid passages each (pipelines/search_rerank.yml's hybrid "
            f"over {args.store}); {cpu_name()}, one thread, precision auto (bf16 where the CPU has it natively); measured on {summary['machine']['date']}. "
            "Time of `PassageRanker.run` per question (tokenising and reading all passages), in ms. Passages "
            "are read in length-sorted batches of at most 8 (the default); *one padded batch*: all at once. "
            "Both back ends compute the reader's last layer for [CLS] alone (all the selection head reads); "
            "*whole forward*: torch computing every token's, the span logits computed and dropped.",
            "",
            *markdown_table(["ranker", "p50", "p95", "mean"], rows, "lrrr"),
            "",
            *produced_by(summary["command"]),
        ]
    )
    write_report(args.out_dir / "ranker_latency", summary, markdown)
    print(markdown)


if __name__ == "__main__":
    main()
