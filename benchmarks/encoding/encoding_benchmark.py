"""Passage-encoding throughput and question latency: our TextEncoder against sentence-transformers.

Both encode the same pool passages with the same bundled all-MiniLM-L6-v2 weights and batch size.
Our encoder feeds DPR's pair input ``[CLS] title [SEP] text [SEP]``; sentence-transformers is given
the same ``(title, text)`` pairs (so both make the same vectors), and, for reference, the
``"title. text"`` string a plain sentence-transformers user would write. sentence-transformers'
fast CPU paths (bf16 autocast, bf16 weights) run as peers. Systems run in turn inside each
repeat, so machine noise hits all of them alike; medians are reported. A retrieval check
compares top-k accuracy of fp32 and precision auto on NQ dev questions over a small pool slice
(their gold passages plus random others). Run from the repository root:

    python -m benchmarks.encoding.encoding_benchmark            # writes docs/benchmarks/encoding/encoding.{md,json}
    python -m benchmarks.encoding.encoding_benchmark --quick    # smoke run, writes under the cache folder
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from benchmarks.common import cpu_name, log
from benchmarks.encoding.encoding_report import render_markdown
from dpr_components.encoders.bf16_probe import bf16_supported
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.model_layout import resolve_model_path
from dpr_components.encoders.text_encoder import TextEncoder
from dpr_components.evaluation.pool import pool_passages, pool_path
from dpr_components.evaluation.questions import load_questions
from dpr_components.evaluation.retrieval_metrics import evaluate_retrieval
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.settings import cache_dir, data_dir

MODEL = "bundled:all-MiniLM-L6-v2"
Encode = Callable[[], np.ndarray]


def nq_questions(limit: int) -> list[str]:
    with open(data_dir() / "nq" / "dev.jsonl", encoding="utf-8") as handle:
        return [json.loads(line)["question"] for line in handle][:limit]


def load_sentence_transformer(bf16_weights: bool = False):  # untyped: an optional heavy import
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(resolve_model_path(MODEL)), device="cpu")
    return model.to(torch.bfloat16) if bf16_weights else model


def cosine_stats(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Cosine similarity row by row between two sets of vectors."""
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {"min": float(cos.min()), "mean": float(cos.mean()), "p01": float(np.quantile(cos, 0.01))}


def throughput_systems(titles: list[str], texts: list[str], batch_size: int, model, model_bf16) -> dict[str, Encode]:
    """The systems compared, each a no-argument function returning the passage vectors."""
    ours_fp32 = TextEncoder(EncoderSettings(model=MODEL, precision="fp32"), batch_size=batch_size)
    ours_auto = TextEncoder(EncoderSettings(model=MODEL, precision="auto"), batch_size=batch_size)
    pairs = list(zip(titles, texts, strict=True))
    prefixed = [f"{title}. {text}" if title else text for title, text in pairs]

    def st(inputs: list, bf16: bool, st_model=model) -> Encode:
        def run() -> np.ndarray:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                return st_model.encode(inputs, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)

        return run

    return {
        "ours_fp32": lambda: ours_fp32.encode_passages(texts, titles),
        "ours_auto": lambda: ours_auto.encode_passages(texts, titles),
        "st_fp32_pair": st(pairs, bf16=False),
        "st_bf16_pair": st(pairs, bf16=True),
        "st_bf16w_pair": st(pairs, bf16=False, st_model=model_bf16),
        "st_fp32_prefix": st(prefixed, bf16=False),
    }


def padding_overhead(lengths: list[int], order: np.ndarray, batch_size: int) -> float:
    """Tokens computed (each batch padded to its longest) per real token, for inputs batched in ``order``."""
    computed = sum(
        max(lengths[i] for i in order[s : s + batch_size]) * len(order[s : s + batch_size])
        for s in range(0, len(order), batch_size)
    )
    return computed / sum(lengths)


def measure_throughput(
    chunks: list[dict[str, Encode]], sizes: list[int], repeats: int
) -> tuple[dict, dict[str, np.ndarray]]:
    """Per repeat, every system encodes every chunk, systems taking turns chunk by chunk (rotating
    order) so that load changes on a shared machine hit all of them alike; passages/s per repeat
    and the first repeat's vectors."""
    names = list(chunks[0])
    runs: dict[str, list[float]] = {name: [] for name in names}
    outputs: dict[str, list[np.ndarray]] = {name: [] for name in names}
    turn = 0
    for repeat in range(repeats):
        seconds = dict.fromkeys(names, 0.0)
        for systems in chunks:
            for name in names[turn % len(names) :] + names[: turn % len(names)]:
                start = time.perf_counter()
                out = systems[name]()
                seconds[name] += time.perf_counter() - start
                if repeat == 0:
                    outputs[name].append(np.asarray(out, dtype=np.float32))
            turn += 1
        for name in names:
            runs[name].append(sum(sizes) / seconds[name])
            log(f"repeat {repeat + 1}/{repeats} {name}: {runs[name][-1]:.1f} passages/s ({seconds[name]:.1f} s)")
    base = "st_fp32_pair"
    results = {}
    for name in names:
        ratios = [r / b for r, b in zip(runs[name], runs[base], strict=True)]
        results[name] = {
            "passages_per_s_runs": [round(x, 2) for x in runs[name]],
            "passages_per_s_median": round(statistics.median(runs[name]), 2),
            "ratio_vs_st_fp32_pair_median": round(statistics.median(ratios), 3),
        }
    return results, {name: np.concatenate(parts) for name, parts in outputs.items()}


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


def _normalised(text: str) -> str:
    return " ".join(text.split())


def retrieval_slice(limit: int, others: int, seed: int) -> tuple[list[int], int]:
    """Pool passage indices: those of the questions' gold paragraphs plus ``others`` random ones,
    and how many gold paragraphs were found in the pool."""
    gold: set[tuple[str, str]] = set()
    with open(data_dir() / "nq" / "dev.jsonl", encoding="utf-8") as handle:
        for line in list(handle)[:limit]:
            for ctx in json.loads(line).get("positive_ctxs", []):
                gold.add((ctx["title"], _normalised(ctx["text"])))
    gold_docs: set[str] = set()
    with open(pool_path(), encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if (record.get("title", ""), _normalised(record["text"])) in gold:
                gold_docs.add(record["id"])
    pool = pool_passages()
    chosen = [i for i, p in enumerate(pool) if p.document_id in gold_docs]
    rest = sorted(set(range(len(pool))) - set(chosen))
    chosen += random.Random(seed).sample(rest, others)
    return sorted(chosen), len(gold_docs)


def measure_retrieval(limit: int, others: int, seed: int, batch_size: int, ks: tuple[int, ...] = (1, 5, 20)) -> dict:
    """Top-k accuracy of fp32 and precision auto over the questions' gold passages plus random others."""
    questions = load_questions(str(data_dir() / "nq" / "dev.jsonl"), limit=limit)
    chosen, gold_found = retrieval_slice(limit, others, seed)
    pool = pool_passages()
    texts, titles = [pool[i].text for i in chosen], [pool[i].title for i in chosen]
    result: dict = {"questions": len(questions), "passages": len(chosen), "gold_paragraphs_found": gold_found}
    vectors = {}
    for precision in ("fp32", "auto"):
        encoder = TextEncoder(EncoderSettings(model=MODEL, precision=precision), batch_size=batch_size)
        log(f"retrieval check: encoding {len(chosen)} passages, precision {precision}")
        passages = encoder.encode_passages(texts, titles)
        queries = encoder.encode_questions([q.question for q in questions])
        top = np.argsort(-(queries @ passages.T), axis=1, kind="stable")[:, : max(ks)]
        evaluation = evaluate_retrieval(
            [q.answers for q in questions], [[texts[j] for j in row] for row in top], max_k=max(ks)
        )
        result[precision] = {f"top_{k}": round(evaluation.accuracy(k), 2) for k in ks}
        vectors[precision] = passages
    result["agreement"] = cosine_stats(vectors["fp32"], vectors["auto"])
    return result


def build_parser() -> argparse.ArgumentParser:
    """The command's options."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=500, help="passages per turn: systems alternate chunk by chunk")
    parser.add_argument("--questions", type=int, default=200, help="NQ dev questions for the latency test")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--retrieval-questions", type=int, default=200, help="NQ dev questions for the retrieval check")
    parser.add_argument("--retrieval-others", type=int, default=3000, help="random pool passages beside the gold ones")
    parser.add_argument("--quick", action="store_true", help="tiny smoke run; output goes to the cache folder")
    parser.add_argument(
        "--out-dir", type=Path, default=None, help="default docs/benchmarks/encoding (cache folder with --quick)"
    )
    return parser


def padding_overheads(lengths: list[int], titles: list[str], texts: list[str], batch_size: int) -> dict[str, float]:
    """Tokens computed per real token when sorting by characters, by tokens, or not at all."""
    by_characters = np.argsort([-len(a) - len(b) for a, b in zip(titles, texts, strict=True)], kind="stable")
    return {
        "by_characters": padding_overhead(lengths, by_characters, batch_size),
        "by_tokens": padding_overhead(lengths, np.argsort([-n for n in lengths], kind="stable"), batch_size),
        "unsorted": padding_overhead(lengths, np.arange(len(lengths)), batch_size),
    }


def throughput_and_agreement(
    titles: list[str], texts: list[str], args: argparse.Namespace, model, model_bf16
) -> tuple[dict, dict[str, dict[str, float]]]:
    """Every system's throughput, chunk by chunk in turns, and how far their vectors agree."""
    bounds = [(start, min(start + args.chunk, len(titles))) for start in range(0, len(titles), args.chunk)]
    chunks = [throughput_systems(titles[a:b], texts[a:b], args.batch_size, model, model_bf16) for a, b in bounds]
    for run in throughput_systems(titles[:32], texts[:32], args.batch_size, model, model_bf16).values():
        run()  # warm-up: first calls allocate and pick kernels
    throughput, vectors = measure_throughput(chunks, [b - a for a, b in bounds], args.repeats)
    agreement = {
        "ours fp32 vs ours auto (bf16 weights)": cosine_stats(vectors["ours_fp32"], vectors["ours_auto"]),
        "ours fp32 vs ST fp32 pairs": cosine_stats(vectors["ours_fp32"], vectors["st_fp32_pair"]),
        "ST fp32 pairs vs ST bf16 autocast pairs": cosine_stats(vectors["st_fp32_pair"], vectors["st_bf16_pair"]),
        "ST fp32 pairs vs ST bf16 weights pairs": cosine_stats(vectors["st_fp32_pair"], vectors["st_bf16w_pair"]),
        'ours fp32 vs ST fp32 "title. text"': cosine_stats(vectors["ours_fp32"], vectors["st_fp32_prefix"]),
    }
    return throughput, agreement


def environment() -> dict:
    """The machine and library versions of the run."""
    import sentence_transformers

    return {
        "cpu": cpu_name(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "bf16_supported": bf16_supported(),
        "date": time.strftime("%Y-%m-%d"),
    }


def measure(args: argparse.Namespace) -> dict:
    """Every measurement of the benchmark, as its JSON report."""
    pool = pool_passages()
    chosen = sorted(random.Random(args.seed).sample(range(len(pool)), args.passages))
    titles = [pool[i].title for i in chosen]
    texts = [pool[i].text for i in chosen]
    log(f"{len(chosen)} passages sampled from {len(pool)}")
    model = load_sentence_transformer()
    model_bf16 = load_sentence_transformer(bf16_weights=True)
    probe = TextEncoder(EncoderSettings(model=MODEL))
    tokens = model.tokenizer(titles, texts, truncation="only_second", max_length=probe.max_length)
    lengths = [len(ids) for ids in tokens["input_ids"]]
    padding = padding_overheads(lengths, titles, texts, args.batch_size)
    throughput, agreement = throughput_and_agreement(titles, texts, args, model, model_bf16)
    del model_bf16
    retrieval = measure_retrieval(args.retrieval_questions, args.retrieval_others, args.seed, args.batch_size)
    log("latency")
    latency = measure_latency(nq_questions(args.questions), model)
    config = {
        "model": MODEL,
        "passages": len(chosen),
        "seed": args.seed,
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "chunk": args.chunk,
        "latency_questions": args.questions,
        "max_length": probe.max_length,
        "mean_tokens": round(float(np.mean(lengths)), 1),
        "padding_overhead": {k: round(v, 3) for k, v in padding.items()},
        "ours_auto_uses_bf16": probe.uses_bf16,
        "retrieval_others": args.retrieval_others,
    }
    return {
        "config": config,
        "environment": environment(),
        "throughput": throughput,
        "agreement": agreement,
        "retrieval": retrieval,
        "latency": latency,
    }


def main() -> None:
    args = build_parser().parse_args()
    if args.quick:
        args.passages, args.repeats, args.questions = 128, 1, 20
        args.retrieval_questions, args.retrieval_others = 20, 100
    out_dir = args.out_dir or (
        cache_dir() / "encoding_benchmark_quick" if args.quick else Path("docs/benchmarks/encoding")
    )
    report = measure(args)
    command = " ".join(["python -m benchmarks.encoding.encoding_benchmark", *sys.argv[1:]])
    atomic_write_text(out_dir / "encoding.json", json.dumps(report, indent=2) + "\n")
    atomic_write_text(out_dir / "encoding.md", render_markdown(report, command))
    log(f"wrote {out_dir / 'encoding.md'} and {out_dir / 'encoding.json'}")


if __name__ == "__main__":
    main()
