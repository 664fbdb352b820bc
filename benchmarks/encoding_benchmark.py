"""Passage-encoding throughput and question latency: our TextEncoder against sentence-transformers.

Both encode the same pool passages with the same bundled all-MiniLM-L6-v2 weights and batch size.
Our encoder feeds DPR's pair input ``[CLS] title [SEP] text [SEP]``; sentence-transformers is given
the same ``(title, text)`` pairs (so both make the same vectors), and, for reference, the
``"title. text"`` string a plain sentence-transformers user would write. Systems run in turn
inside each repeat, so machine noise hits all of them alike; medians are reported. Run from the
repository root:

    python -m benchmarks.encoding_benchmark            # writes docs/benchmarks/encoding.{md,json}
    python -m benchmarks.encoding_benchmark --quick    # smoke run, writes under the cache folder
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from benchmarks.pool import pool_passages
from dpr_components.encoders import EncoderSettings, TextEncoder, bf16_supported, resolve_model_path
from dpr_components.io_utils import atomic_write_text
from dpr_components.settings import cache_dir, data_dir

MODEL = "bundled:all-MiniLM-L6-v2"
Encode = Callable[[], np.ndarray]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def nq_questions(limit: int) -> list[str]:
    with open(data_dir() / "nq" / "dev.jsonl", encoding="utf-8") as handle:
        return [json.loads(line)["question"] for line in handle][:limit]


def load_sentence_transformer():  # noqa: ANN201 - optional heavy import
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(resolve_model_path(MODEL)), device="cpu")


def cosine_stats(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Cosine similarity row by row between two sets of vectors."""
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {"min": float(cos.min()), "mean": float(cos.mean()), "p01": float(np.quantile(cos, 0.01))}


def throughput_systems(
    titles: list[str], texts: list[str], batch_size: int, model
) -> dict[str, Encode]:
    """The systems compared, each a no-argument function returning the passage vectors."""
    ours_fp32 = TextEncoder(EncoderSettings(model=MODEL, precision="fp32"), batch_size=batch_size)
    ours_auto = TextEncoder(EncoderSettings(model=MODEL, precision="auto"), batch_size=batch_size)
    pairs = list(zip(titles, texts))
    prefixed = [f"{title}. {text}" if title else text for title, text in pairs]

    def st(inputs: list, bf16: bool) -> Encode:
        def run() -> np.ndarray:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                return model.encode(inputs, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)

        return run

    return {
        "ours_fp32": lambda: ours_fp32.encode_passages(texts, titles),
        "ours_auto": lambda: ours_auto.encode_passages(texts, titles),
        "st_fp32_pair": st(pairs, bf16=False),
        "st_bf16_pair": st(pairs, bf16=True),
        "st_fp32_prefix": st(prefixed, bf16=False),
    }


def measure_throughput(systems: dict[str, Encode], n: int, repeats: int) -> tuple[dict, dict[str, np.ndarray]]:
    """Run every system once per repeat, in rotating order; passages/s per run and the first vectors."""
    runs: dict[str, list[float]] = {name: [] for name in systems}
    vectors: dict[str, np.ndarray] = {}
    names = list(systems)
    for repeat in range(repeats):
        order = names[repeat % len(names) :] + names[: repeat % len(names)]
        for name in order:
            start = time.perf_counter()
            out = systems[name]()
            seconds = time.perf_counter() - start
            runs[name].append(n / seconds)
            vectors.setdefault(name, np.asarray(out, dtype=np.float32))
            log(f"repeat {repeat + 1}/{repeats} {name}: {n / seconds:.1f} passages/s ({seconds:.1f} s)")
    base = "st_fp32_pair"
    results = {}
    for name in names:
        ratios = [r / b for r, b in zip(runs[name], runs[base])]
        results[name] = {
            "passages_per_s_runs": [round(x, 2) for x in runs[name]],
            "passages_per_s_median": round(statistics.median(runs[name]), 2),
            "ratio_vs_st_fp32_pair_median": round(statistics.median(ratios), 3),
        }
    return results, vectors


def measure_latency(questions: list[str], model, warmup: int = 10) -> dict:
    """Milliseconds to encode one question, per system, systems interleaved question by question."""
    ours_auto = TextEncoder(EncoderSettings(model=MODEL, precision="auto"))
    ours_fp32 = TextEncoder(EncoderSettings(model=MODEL, precision="fp32"))
    systems: dict[str, Callable[[str], object]] = {
        "ours_auto": lambda q: ours_auto.encode_questions([q]),
        "ours_fp32": lambda q: ours_fp32.encode_questions([q]),
        "st_fp32": lambda q: model.encode([q], convert_to_numpy=True, show_progress_bar=False),
    }
    for question in questions[:warmup]:
        for run in systems.values():
            run(question)
    times: dict[str, list[float]] = {name: [] for name in systems}
    names = list(systems)
    for i, question in enumerate(questions):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            start = time.perf_counter()
            systems[name](question)
            times[name].append((time.perf_counter() - start) * 1000)
    return {
        name: {
            "p50_ms": round(float(np.percentile(t, 50)), 2),
            "p95_ms": round(float(np.percentile(t, 95)), 2),
            "mean_ms": round(float(np.mean(t)), 2),
        }
        for name, t in times.items()
    }


LABELS = {
    "ours_fp32": "ours, fp32",
    "ours_auto": "ours, precision auto (bf16 autocast here)",
    "st_fp32_pair": "sentence-transformers, fp32, (title, text) pairs",
    "st_bf16_pair": "sentence-transformers, bf16 autocast, (title, text) pairs",
    "st_fp32_prefix": 'sentence-transformers, fp32, "title. text" strings',
}


def render_markdown(report: dict, command: str) -> str:
    cfg = report["config"]
    lines = [
        "# Passage encoding: our TextEncoder vs sentence-transformers",
        "",
        f"Produced by `{command}` (from the repository root) on {report['environment']['date']}.",
        "",
        f"- Model: bundled all-MiniLM-L6-v2 (384-d, mean pooling, unit-normalised), max length {cfg['max_length']}.",
        f"- Passages: {cfg['passages']} DPR passages drawn at random (seed {cfg['seed']}) from the pool, "
        f"{cfg['mean_tokens']:.0f} tokens each on average as pairs; batch size {cfg['batch_size']}.",
        f"- Machine: {report['environment']['cpu']}, {report['environment']['torch_threads']} torch threads, "
        f"torch {report['environment']['torch']}, sentence-transformers {report['environment']['sentence_transformers']}; "
        f"native bf16: {report['environment']['bf16_supported']}. The machine is shared and noisy: "
        f"compare the ratios (measured in the same repeat), not the absolute numbers.",
        f"- Each of the {cfg['repeats']} repeats runs every system once (rotating order); the table shows the "
        "median passages/s and the median per-repeat ratio to sentence-transformers fp32 on the same pairs.",
        "",
        "Inputs: our encoder builds DPR's pair input `[CLS] title [SEP] text [SEP]`. sentence-transformers is given "
        "the same `(title, text)` pairs, so both compute the same thing (see the agreement table). The "
        '`"title. text"` row is what a plain sentence-transformers user would write; its input and vectors differ slightly.',
        "",
        "## Throughput",
        "",
        "| system | passages/s (median) | runs | ratio vs ST fp32 pairs |",
        "|---|---:|---|---:|",
    ]
    for name, row in report["throughput"].items():
        runs = ", ".join(f"{x:.1f}" for x in row["passages_per_s_runs"])
        lines.append(
            f"| {LABELS[name]} | {row['passages_per_s_median']:.1f} | {runs} | {row['ratio_vs_st_fp32_pair_median']:.2f}x |"
        )
    lines += ["", "## Vector agreement (cosine similarity per passage)", "", "| compared | min | 1st percentile | mean |", "|---|---:|---:|---:|"]
    for name, row in report["agreement"].items():
        lines.append(f"| {name} | {row['min']:.5f} | {row['p01']:.5f} | {row['mean']:.5f} |")
    lat = report["latency"]
    lines += [
        "",
        f"## Single-question latency ({cfg['latency_questions']} NQ dev questions, one call per question)",
        "",
        "Systems alternate question by question (rotating order). The first 10 questions are run once untimed to warm up; every question is then timed.",
        "",
        "| system | p50 ms | p95 ms | mean ms |",
        "|---|---:|---:|---:|",
    ]
    latency_labels = {
        "ours_auto": "ours `encode_questions([q])`, precision auto (bf16)",
        "ours_fp32": "ours `encode_questions([q])`, fp32",
        "st_fp32": "sentence-transformers `encode([q])`, fp32",
    }
    for name, row in lat.items():
        lines.append(f"| {latency_labels[name]} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} | {row['mean_ms']:.1f} |")
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--questions", type=int, default=200, help="NQ dev questions for the latency test")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="tiny smoke run; output goes to the cache folder")
    parser.add_argument("--out-dir", type=Path, default=None, help="default docs/benchmarks (cache folder with --quick)")
    args = parser.parse_args()
    if args.quick:
        args.passages, args.repeats, args.questions = 128, 1, 20
    out_dir = args.out_dir or (cache_dir() / "encoding_benchmark_quick" if args.quick else Path("docs/benchmarks"))

    pool = pool_passages()
    chosen = sorted(random.Random(args.seed).sample(range(len(pool)), args.passages))
    titles = [pool[i].title for i in chosen]
    texts = [pool[i].text for i in chosen]
    log(f"{len(chosen)} passages sampled from {len(pool)}")

    model = load_sentence_transformer()
    probe = TextEncoder(EncoderSettings(model=MODEL))
    tokens = model.tokenizer(titles, texts, truncation="only_second", max_length=probe.max_length)
    mean_tokens = float(np.mean([len(ids) for ids in tokens["input_ids"]]))

    systems = throughput_systems(titles, texts, args.batch_size, model)
    for run in throughput_systems(titles[:32], texts[:32], args.batch_size, model).values():
        run()  # warm-up: first calls allocate and pick kernels
    throughput, vectors = measure_throughput(systems, len(chosen), args.repeats)
    agreement = {
        "ours fp32 vs ours bf16 (auto)": cosine_stats(vectors["ours_fp32"], vectors["ours_auto"]),
        "ours fp32 vs ST fp32 pairs": cosine_stats(vectors["ours_fp32"], vectors["st_fp32_pair"]),
        "ST fp32 pairs vs ST bf16 pairs": cosine_stats(vectors["st_fp32_pair"], vectors["st_bf16_pair"]),
        'ours fp32 vs ST fp32 "title. text"': cosine_stats(vectors["ours_fp32"], vectors["st_fp32_prefix"]),
    }
    log("latency")
    latency = measure_latency(nq_questions(args.questions), model)

    import sentence_transformers

    report = {
        "config": {
            "model": MODEL,
            "passages": len(chosen),
            "seed": args.seed,
            "batch_size": args.batch_size,
            "repeats": args.repeats,
            "latency_questions": args.questions,
            "max_length": probe.max_length,
            "mean_tokens": round(mean_tokens, 1),
            "ours_auto_uses_bf16": probe.uses_bf16,
        },
        "environment": {
            "cpu": cpu_name(),
            "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "sentence_transformers": sentence_transformers.__version__,
            "bf16_supported": bf16_supported(),
            "date": time.strftime("%Y-%m-%d"),
        },
        "throughput": throughput,
        "agreement": agreement,
        "latency": latency,
    }
    command = " ".join(["python -m benchmarks.encoding_benchmark", *sys.argv[1:]])
    atomic_write_text(out_dir / "encoding.json", json.dumps(report, indent=2) + "\n")
    atomic_write_text(out_dir / "encoding.md", render_markdown(report, command))
    log(f"wrote {out_dir / 'encoding.md'} and {out_dir / 'encoding.json'}")


if __name__ == "__main__":
    main()
