"""Measure training speed and peak memory for a few settings on real data (short runs).

    python -m training.retriever.measure_speed --data runs/smoke/nq-train-300-bm25.jsonl --steps 6 \\
        --batch-size 16 --variants plain,grad_cache:4,bf16 --threads 1

Each variant trains from the bundled MiniLM for --steps steps in its own process (so peak
memory is its own) and reports examples/s over the steps after the first (which includes
warm-up) and the process's peak resident memory. Results go to --out as JSON and Markdown."""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common import cpu_name
from dpr_components.encoders.bf16_probe import bf16_supported
from dpr_components.evaluation.tables import table_header
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.threads import thread_count_option


def _one(args: argparse.Namespace) -> None:
    import torch

    from dpr_components.dpr_data.loading import load_training_examples
    from dpr_components.encoder_training.settings import EncoderTrainingSettings
    from dpr_components.encoder_training.train import train
    from dpr_components.runs.process_state import peak_rss_mb
    from dpr_components.runs.run_log import read_log
    from dpr_components.utils.sources import resolve_data_source

    torch.set_num_threads(args.threads)
    examples = load_training_examples(resolve_data_source(args.data)).examples
    settings = json.loads(args.one)
    config = EncoderTrainingSettings(
        batch_size=settings.pop("batch_size", args.batch_size),
        negatives=args.negatives,
        max_steps=args.steps,
        log_every=1,
        checkpoint_every=10**6,
        threads=args.threads,
        similarity="cosine",
        **settings,
    )
    with tempfile.TemporaryDirectory() as out:
        train(config, examples, out, show_progress=False)
        log = [e for e in read_log(Path(out) / "log.jsonl") if "loss" in e]
    timed = log[1:]  # the first step includes one-off warm-up costs
    seconds = timed[-1]["elapsed_s"] - log[0]["elapsed_s"]
    print(
        json.dumps(
            {
                "batch_size": config.batch_size,
                "examples_per_s": len(timed) * config.batch_size / seconds,
                "seconds_per_step": seconds / len(timed),
                "peak_rss_mb": peak_rss_mb(),
                "losses": [e["loss"] for e in log],
            }
        )
    )


VARIANTS = {
    "plain": {},
    "bf16": {"bf16": True},
    "one_pass": {"encode_chunk": None},  # the batch's passages in one forward pass
}


def variant_settings(name: str) -> dict:
    """``plain``, ``bf16``, ``one_pass``, ``grad_cache:<chunk>``, ``encode_chunk:<passages>``, ``bs<N>`` (batch
    size), joined by ``+``: e.g. ``bs128+bf16+grad_cache:32``."""
    settings: dict = {}
    for part in name.split("+"):
        if part.startswith("bs") and part[2:].isdigit():
            settings["batch_size"] = int(part[2:])
        elif part.startswith("grad_cache:"):
            settings["grad_cache_chunk"] = int(part.split(":", 1)[1])
        elif part.startswith("encode_chunk:"):
            settings["encode_chunk"] = int(part.split(":", 1)[1])
        elif part in VARIANTS:
            settings.update(VARIANTS[part])
        else:
            raise ValueError(f"unknown variant {part!r}")
    return settings


def build_parser() -> argparse.ArgumentParser:
    """The command's options."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--negatives", type=int, default=1)
    parser.add_argument("--threads", type=thread_count_option, default=1)
    parser.add_argument("--variants", default="plain,grad_cache:4")
    parser.add_argument("--out", default="runs/speed")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.one:
        _one(args)
        return 0
    command = "python -m training.retriever.measure_speed " + shlex.join(sys.argv[1:] if argv is None else argv)
    rows = []
    for name in args.variants.split(","):
        child = [
            sys.executable,
            "-m",
            "training.retriever.measure_speed",
            "--data",
            args.data,
            "--steps",
            str(args.steps),
            "--batch-size",
            str(args.batch_size),
            "--negatives",
            str(args.negatives),
            "--threads",
            str(args.threads),
            "--one",
            json.dumps(variant_settings(name)),
        ]
        done = subprocess.run(child, capture_output=True, text=True, check=False)
        if done.returncode:
            print(done.stderr[-3000:], file=sys.stderr)
            return 1
        rows.append({"variant": name, **json.loads(done.stdout.strip().splitlines()[-1])})
        print(json.dumps(rows[-1]), flush=True)
    passages = args.batch_size * (1 + args.negatives)
    lines = [
        "# Training speed (bundled MiniLM, cosine NLL, in-batch + hard negatives)",
        "",
        f"Produced by: `{command}`",
        "",
        f"Machine: {platform.machine()}, {cpu_name()}, native bf16: {'yes' if bf16_supported() else 'no'}; "
        f"{args.threads} thread(s). Batch: {args.batch_size} questions and "
        f"{passages} passages per step unless the variant sets `bs<N>` (N questions, N × {1 + args.negatives} "
        f"passages); {args.steps} steps, the first not timed. The machine is shared: absolute speeds vary "
        "between runs; compare the rows of one run.",
        "",
        *table_header(["variant", "batch (questions)", "examples/s", "s/step", "peak RSS (MB)"], "lrrrr"),
    ]
    lines += [
        f"| {r['variant']} | {r['batch_size']} | {r['examples_per_s']:.2f} | {r['seconds_per_step']:.1f} | "
        f"{r['peak_rss_mb']:.0f} |"
        for r in rows
    ]
    out = Path(args.out)
    atomic_write_text(out / "speed.json", json.dumps({"command": command, "rows": rows}, indent=1))
    atomic_write_text(out / "speed.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
