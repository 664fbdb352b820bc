"""A DPR-layout passage encoder (what ``DPRTrainer`` and ``python -m training.retriever.convert to-dpr`` write) on its
back ends: the default (``backend="auto"``) against torch, which was all a DPR folder could run on.

The bundled all-MiniLM-L6-v2 is written in the Hugging Face DPR layout (``to_dpr``, into a temporary
folder) and its passage encoder timed on 1,000 pool passages: ``backend="auto"``, ``backend="torch"``
(precision auto) and torch fp32, the reference of the cosines; beside them the bundled folder itself
on ``backend="auto"``, the same network in its own layout. The systems take turns ``--chunk`` passages
at a time in a rotating order (``benchmarks.encoding.backends.measure``). Writes
docs/benchmarks/encoding/dpr_layout.{md,json}.

    python -m benchmarks.encoding.dpr_layout
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import REPO_ROOT, command_line, set_threads, write_report
from benchmarks.encoding.backends import measure
from benchmarks.encoding.encoding_benchmark import cosine_stats
from benchmarks.encoding.limit import backend_label, computes_in, machine, sample_passages
from dpr_components.encoder_training.convert import to_dpr
from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.pairing import PASSAGE_DIR
from dpr_components.encoders.text_encoder import TextEncoder
from dpr_components.evaluation.pool import pool_passages
from dpr_components.evaluation.tables import markdown_table, produced_by

MODULE = "benchmarks.encoding.dpr_layout"
REFERENCE = "DPR layout, torch fp32"


def systems(dpr_folder: Path, batch_size: int) -> dict[str, TextEncoder]:
    """The encoders compared, by name (the reference last)."""

    def encoder(model: str, backend: str, precision: str = "auto") -> TextEncoder:
        settings = EncoderSettings(model=model, backend=backend, precision=precision)  # type: ignore[arg-type]
        return TextEncoder(settings, batch_size=batch_size)

    passage = str(dpr_folder / PASSAGE_DIR)
    return {
        "DPR layout, default (backend auto)": encoder(passage, "auto"),
        "DPR layout, backend torch": encoder(passage, "torch"),
        "bundled folder, default (backend auto)": encoder(BUNDLED_MINILM, "auto"),
        REFERENCE: encoder(passage, "torch", "fp32"),
    }


def summarise(encoders: dict[str, TextEncoder], measured: dict[str, Any], repeats: int) -> list[dict[str, Any]]:
    """One row per system: what runs it, passages/s, its rate over the DPR folder on torch, cosines to fp32."""
    passages = len(measured["vectors"][REFERENCE]) * repeats
    on_torch = measured["seconds"]["DPR layout, backend torch"]
    return [
        {
            "system": name,
            "backend": encoder.backend,
            "computes_in": computes_in(encoder),
            "passages_per_s": passages / measured["seconds"][name],
            "ratio_vs_dpr_on_torch": on_torch / measured["seconds"][name],
            "cosine_to_torch_fp32": cosine_stats(measured["vectors"][REFERENCE], measured["vectors"][name]),
        }
        for name, encoder in encoders.items()
    ]


def render(summary: dict[str, Any]) -> str:
    config, cpu = summary["config"], summary["machine"]
    rows = [
        [
            row["system"],
            backend_label(row["backend"]),
            row["computes_in"],
            f"{row['passages_per_s']:.1f}",
            f"{row['ratio_vs_dpr_on_torch']:.2f}x",
            f"{row['cosine_to_torch_fp32']['min']:.5f}",
        ]
        for row in summary["rows"]
    ]
    columns = ["system", "back end", "computes in", "passages/s", "÷ DPR layout on torch", "cosine min"]
    return "\n".join(
        [
            "# A DPR-layout passage encoder on its back ends",
            "",
            "The bundled all-MiniLM-L6-v2 written in the Hugging Face DPR layout (`question_encoder/` +",
            "`passage_encoder/`, what `DPRTrainer` and `python -m training.retriever.convert to-dpr` write), its passage encoder",
            "timed on the back ends a user gets: `backend: auto` (the default), `backend: torch` (precision auto,",
            "all a DPR folder could run on before OpenVINO took the DPR layout) and torch fp32, the reference of",
            "the cosines. The bundled folder itself on `backend: auto` runs the same network in its own layout.",
            "",
            f"- Machine: {cpu['cpu']}, {cpu['cores']} cores, {cpu['threads']} thread(s); native bf16 (torch): "
            f"{'yes' if cpu['native_bf16'] else 'no'}. Load average (1 min) {cpu['load_average_start']:.2f} at the "
            f"start, {summary['load_average_end']:.2f} at the end.",
            f"- {config['passages']} pool passages (seed {config['seed']}), batch size {config['batch_size']}, "
            f"{config['repeats']} repeat(s), the systems taking turns {config['chunk']} passages at a time in a "
            "rotating order. Ratios compare systems of this run only.",
            "",
            *markdown_table(columns, rows, "lllrrr"),
            "",
            *produced_by(summary["command"]),
        ]
    )


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--chunk", type=int, default=250, help="passages per turn")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "benchmarks" / "encoding" / "dpr_layout")
    parser.add_argument("--from-json", action="store_true", help="render the report again from its JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.from_json:
        summary = json.loads(args.out.with_suffix(".json").read_text(encoding="utf-8"))
        write_report(args.out, summary, render(summary))
        return
    set_threads(args.threads)
    cpu = machine(args.threads)
    chosen = sample_passages(pool_passages(), args.passages, args.seed)
    texts, titles = [p.text for p in chosen], [p.title or "" for p in chosen]
    with tempfile.TemporaryDirectory(prefix="dpr-layout-") as work:
        folder = to_dpr(BUNDLED_MINILM, Path(work) / "pair")
        encoders = systems(folder, args.batch_size)
        measured = measure(dict(encoders), texts, titles, args)
        rows = summarise(encoders, measured, args.repeats)
    summary = {
        "machine": cpu,
        "load_average_end": os.getloadavg()[0],
        "config": {k: v for k, v in vars(args).items() if k not in ("out", "from_json")},
        "rows": rows,
        "command": command_line(MODULE, argv),
    }
    markdown = render(summary)
    write_report(args.out, summary, markdown)
    print(markdown)


if __name__ == "__main__":
    main()
