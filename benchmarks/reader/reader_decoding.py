"""The reader's length prior β on both question styles: SQuAD dev with the gold paragraph, and
nq/dev end to end with `pipelines/qa.yml`'s hybrid top 10 and answer ranking.

    python -m benchmarks.reader.reader_decoding --model models/reader-minilm --store indexes/pool
        # writes docs/benchmarks/reader_decoding.{md,json}

Each question's passages go through the model once; every β re-decodes the same logits (a span
of n tokens scores start + end logit − β(n−1)). `pipelines/qa.yml`'s ``length_penalty`` was
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

import dpr_components.readers.predict as predict
from benchmarks.reader.reader_benchmark import qa_pipeline
from dpr_components.evaluation.answer_metrics import exact_match
from dpr_components.evaluation.tables import table_header, table_row
from dpr_components.readers.data import read_jsonl
from dpr_components.readers.model import load_reader
from dpr_components.readers.predict import ReadSettings, read
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.settings import data_dir


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


def sweep(model: str, store: Path, penalties: list[float], limit: int | None) -> dict[str, Any]:
    reader, tokenizer = load_reader(model)
    pipeline = qa_pipeline(model, store, {"precision": "auto"})
    hybrid, qa_reader = pipeline.get_component("hybrid"), pipeline.get_component("reader")
    qa = qa_reader.read_settings
    gold = {b: [] for b in penalties}
    open_domain = {b: [] for b in penalties}
    with OneForwardPerQuestion() as forward:
        squad = [q for q in read_jsonl(data_dir() / "squad" / "dev.jsonl", limit) if q.gold is not None]
        for q in tqdm(squad, desc="squad/dev, gold paragraph", unit="q"):
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
        nq = read_jsonl(data_dir() / "nq" / "dev.jsonl", limit)
        for q in tqdm(nq, desc="nq/dev end to end", unit="q"):
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
        "squad_gold": {"n": len(squad), "exact_match": {str(b): 100 * float(np.mean(v)) for b, v in gold.items()}},
        "nq_end_to_end": {
            "n": len(nq),
            "exact_match": {str(b): 100 * float(np.mean(v)) for b, v in open_domain.items()},
        },
    }


def render(result: dict[str, Any], command: str) -> str:
    penalties = result["penalties"]
    row = lambda label, part: table_row([label, *(f"{result[part]['exact_match'][str(b)]:.1f}" for b in penalties)])  # noqa: E731
    return "\n".join(
        [
            "# Span reader: the length prior β on both question styles",
            "",
            f"Produced by: `{command}`",
            "",
            "Exact match (%) of the reader's answer for each β (a span of n tokens scores start + end logit − β(n−1); "
            "β = 0 is DPR's decoding). SQuAD dev: the gold paragraph is the only passage. nq/dev: `pipelines/qa.yml`'s "
            f"hybrid top {result['top_k']} and its answer ranking. `pipelines/qa.yml` uses β = "
            f"{result['qa_length_penalty']:g}, chosen on these dev sets.",
            "",
            *table_header(["questions", *(f"β={b:g}" for b in penalties)], "l" + "r" * len(penalties)),
            row(f"squad/dev, gold paragraph ({result['squad_gold']['n']:,})", "squad_gold"),
            row(f"nq/dev end to end ({result['nq_end_to_end']['n']:,})", "nq_end_to_end"),
            "",
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
    parser.add_argument("--out", default="docs/benchmarks")
    parser.add_argument("--threads", type=int)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    command = "python -m benchmarks.reader.reader_decoding " + shlex.join(sys.argv[1:])
    penalties = [float(x) for x in args.penalties.split(",") if x.strip()]
    result = sweep(args.model, Path(args.store), penalties, args.limit)
    out = Path(args.out)
    atomic_write_text(out / "reader_decoding.json", json.dumps({**result, "command": command}, indent=1) + "\n")
    atomic_write_text(out / "reader_decoding.md", render(result, command))
    print(render(result, command))


if __name__ == "__main__":
    main()
