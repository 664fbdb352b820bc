"""Top-k over the full pool with the passages encoded by each back end: the accuracy bound of a
kept precision (top-1/5/20 within 0.2 points of fp32 on nq/dev and squad/dev).

Each input is a ``python -m training.retriever.evaluate`` result (the whole pool, answer matching); the
first is the reference. Writes docs/benchmarks/encoding/backend_accuracy.{md,json}:

    python -m training.retriever.evaluate --system bundled:all-MiniLM-L6-v2 --questions nq/dev.jsonl,squad/dev.jsonl \\
        --precision fp32 --passage-backend openvino --out docs/benchmarks/encoding/backend_accuracy_runs/fp32-openvino.json
    (the same with --precision auto --passage-backend openvino: auto-openvino.json, and with
    --precision auto alone: auto-torch.json)
    python -m benchmarks.encoding.backend_accuracy docs/benchmarks/encoding/backend_accuracy_runs/fp32-openvino.json \\
        docs/benchmarks/encoding/backend_accuracy_runs/auto-openvino.json docs/benchmarks/encoding/backend_accuracy_runs/auto-torch.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import REPO_ROOT, command_line, write_report
from dpr_components.evaluation.tables import markdown_table, produced_by

MODULE = "benchmarks.encoding.backend_accuracy"
KS = ("1", "5", "20")
BOUND = 0.2  # points of top-k a kept precision may move


def label(result: dict[str, Any]) -> str:
    return f"passages on {result.get('passage_backend', 'torch')}, precision {result['precision']}"


def comparison(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per system and dataset: top-k, the difference from the first result, and whether all are within the bound."""
    reference = results[0]
    rows = []
    for result in results:
        for dataset, scores in result["datasets"].items():
            base = reference["datasets"][dataset]["top_k"]
            differences = {k: scores["top_k"][k] - base[k] for k in KS}
            rows.append(
                {
                    "system": label(result),
                    "dataset": dataset,
                    "questions": scores["n_questions"],
                    "top_k": {k: scores["top_k"][k] for k in KS},
                    "difference": differences,
                    "within_bound": all(abs(d) <= BOUND + 1e-9 for d in differences.values()),
                    "index_seconds": result["index_seconds"],
                }
            )
    return rows


def render(rows: list[dict[str, Any]], reference: str, command: str) -> str:
    body = [
        [
            r["system"],
            f"{r['dataset']} ({r['questions']:,})",
            *(f"{r['top_k'][k]:.2f}" for k in KS),
            *(f"{r['difference'][k]:+.2f}" for k in KS),
            "yes" if r["within_bound"] else "no",
            f"{r['index_seconds']:.0f}",
        ]
        for r in rows
    ]
    header = [
        "passage encoder",
        "questions",
        *(f"top-{k}" for k in KS),
        *(f"Δ top-{k}" for k in KS),
        f"within {BOUND}",
        "pool vectors (s)",
    ]
    return "\n".join(
        [
            "# Retrieval accuracy by encoding back end (full pool)",
            "",
            "Zero-shot all-MiniLM-L6-v2 over the 55,350-passage pool, exact inner-product search, answer matching; "
            f"the question side runs on torch at the same precision. Δ: points against the first row's system ({reference}), "
            f"whose fp32 vectors match torch fp32's to cosine 1.00000 (docs/benchmarks/encoding/backends.md). A precision is kept when "
            f"every Δ is within {BOUND}. *Pool vectors*: seconds to encode the 55,350 passages (2 threads), "
            "or to read them back from the embedding cache when an earlier run made them. Each row comes from "
            "`python -m training.retriever.evaluate --system bundled:all-MiniLM-L6-v2 --questions nq/dev.jsonl,squad/dev.jsonl "
            "--precision P [--passage-backend openvino] --out docs/benchmarks/encoding/backend_accuracy_runs/NAME.json`.",
            "",
            *markdown_table(header, body, "ll" + "r" * (2 * len(KS)) + "lr"),
            "",
            *produced_by(command),
        ]
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "results", nargs="+", help="training.retriever.evaluate result files; the first is the reference"
    )
    parser.add_argument("--out-dir", type=Path, default=REPO_ROOT / "docs" / "benchmarks" / "encoding")
    args = parser.parse_args(argv)
    results = [json.loads(Path(path).read_text(encoding="utf-8")) for path in args.results]
    rows = comparison(results)
    command = command_line(MODULE, list(sys.argv[1:] if argv is None else argv))
    write_report(
        args.out_dir / "backend_accuracy", {"rows": rows, "command": command}, render(rows, label(results[0]), command)
    )
    print(render(rows, label(results[0]), command))


if __name__ == "__main__":
    main()
