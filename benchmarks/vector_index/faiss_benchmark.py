"""FAISS indexes behind the dense store: Flat vs HNSW vs IVF, on the real pool and scaled up.

Part 1 (real data): the 55,350 pool passages encoded by the bundled MiniLM (read from the
embedding cache) and the 655 NQ dev questions as queries. Flat against HNSW configurations over
an efSearch sweep: single-thread queries/s at top-100 (one ``DenseIndex.search`` call per
question, as the store searches) and recall@100 against Flat's exact top-100. Each HNSW pass is
paired with a Flat pass, alternating in chunks of queries, so machine noise hits both alike.

Part 2 (scaling): Flat, HNSW and IVF (PQ and SQ8) at growing N. Vectors beyond the real ones are synthetic:
drawn from a Gaussian with the real vectors' mean and covariance, then unit-normalised. Build
time (with training), serialized index size, single-thread queries/s and recall@100 vs Flat.

Run from the repository root (about half an hour; use nohup):

    python -m benchmarks.vector_index.faiss_benchmark            # writes docs/benchmarks/vector_index/faiss.{md,json,_scaling.png}
    python -m benchmarks.vector_index.faiss_benchmark --quick    # smoke run, writes under the cache folder
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

from benchmarks.common import cpu_name, log, timed
from benchmarks.vector_index.faiss_report import render_markdown
from dpr_components.document_stores.dense_index import DenseIndex
from dpr_components.encoders.batch_encoding import cache_for, encode_passages_cached
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.text_encoder import TextEncoder
from dpr_components.evaluation.figures import new_figure, save_png
from dpr_components.evaluation.pool import pool_passages
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.settings import cache_dir, data_dir

TOP_K = 100
REAL_CONFIGS = (
    "HNSW32:efc=40",  # what factory "HNSW32" (hence the store) builds; swept over --efs
    "HNSW48:efc=40:efs=160/256/512",
    "HNSW32:efc=200:efs=128/192/224/256/384",
    "HNSW32:efc=500:efs=128/160/192/224/256",
    "HNSW48:efc=400:efs=128/160/192/224/256",
    "HNSW32_SQ8,RFlat:efc=400:kf=2:efs=160/192/224/256",
)


# -- data ------------------------------------------------------------------------------------


def real_vectors() -> tuple[np.ndarray, np.ndarray]:
    """Pool passage vectors (from the embedding cache) and NQ dev question vectors."""
    encoder = TextEncoder(EncoderSettings(), batch_size=64)
    passages = pool_passages()
    cache = cache_for(encoder, cache_dir() / "embeddings")
    vectors = encode_passages_cached(encoder, [p.text for p in passages], [p.title for p in passages], cache)
    with open(data_dir() / "nq" / "dev.jsonl", encoding="utf-8") as handle:
        questions = [json.loads(line)["question"] for line in handle]
    return vectors, encoder.encode_questions(questions)


def synthetic_vectors(real: np.ndarray, count: int, seed: int, chunk: int = 100_000) -> np.ndarray:
    """``count`` unit vectors drawn from a Gaussian fitted (mean + covariance) to ``real``."""
    rng = np.random.default_rng(seed)
    mean = real.mean(0, dtype=np.float64)
    cov = np.cov(real, rowvar=False, dtype=np.float64)
    factor = np.linalg.cholesky(cov + 1e-8 * np.eye(cov.shape[0]))
    out = np.empty((count, real.shape[1]), dtype=np.float32)
    for start in range(0, count, chunk):
        n = min(chunk, count - start)
        block = rng.standard_normal((n, real.shape[1])) @ factor.T + mean
        out[start : start + n] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


# -- index configurations --------------------------------------------------------------------


@dataclass(frozen=True)
class IndexConfig:
    """A factory string plus build/search knobs the factory string cannot express."""

    factory: str
    ef_construction: int | None = None
    k_factor: float | None = None
    efs: tuple[int, ...] = ()

    @classmethod
    def parse(cls, spec: str) -> IndexConfig:
        """``FACTORY[:efc=N][:kf=X][:efs=A/B/C]``, e.g. ``HNSW32:efc=200:efs=128/256``."""
        factory, *options = spec.split(":")
        values = dict(option.split("=", 1) for option in options)
        unknown = set(values) - {"efc", "kf", "efs"}
        if unknown:
            raise SystemExit(f"unknown option(s) {sorted(unknown)} in index spec {spec!r}")
        efc, kf, efs = values.get("efc"), values.get("kf"), values.get("efs")
        return cls(
            factory,
            int(efc) if efc else None,
            float(kf) if kf else None,
            tuple(int(x) for x in efs.split("/")) if efs else (),
        )

    @property
    def name(self) -> str:
        parts = [self.factory]
        if self.ef_construction:
            parts.append(f"efC={self.ef_construction}")
        if self.k_factor:
            parts.append(f"k_factor={self.k_factor:g}")
        return " ".join(parts)


class TunedDenseIndex(DenseIndex):
    """The store's DenseIndex with efConstruction and refine k_factor set on the FAISS objects."""

    def __init__(self, dim: int, config: IndexConfig) -> None:
        self.config = config
        super().__init__(dim, "dot_product", config.factory)

    def _new_index(self) -> faiss.Index:
        wrapped = super()._new_index()
        inner = faiss.downcast_index(wrapped.index)
        if isinstance(inner, faiss.IndexRefine):
            if self.config.k_factor:
                inner.k_factor = self.config.k_factor
            inner = faiss.downcast_index(inner.base_index)
        if isinstance(inner, faiss.IndexHNSW) and self.config.ef_construction:
            inner.hnsw.efConstruction = self.config.ef_construction
        return wrapped

    def set_search(self, ef_search: int | None = None, nprobe: int | None = None) -> None:
        """Set efSearch / nprobe both for ``search`` and on the FAISS objects (batched raw search)."""
        self.ef_search, self.nprobe = ef_search, nprobe
        inner = faiss.downcast_index(self._index.index)
        if isinstance(inner, faiss.IndexRefine):
            inner = faiss.downcast_index(inner.base_index)
        if isinstance(inner, faiss.IndexHNSW) and ef_search:
            inner.hnsw.efSearch = ef_search
        if isinstance(inner, faiss.IndexIVF) and nprobe:
            inner.nprobe = nprobe

    def raw_search(self, queries: np.ndarray, k: int) -> np.ndarray:
        """One batched FAISS call (the store searches one question at a time)."""
        return self._index.search(queries, k)[1]

    def size_bytes(self) -> int:
        return int(faiss.serialize_index(self._index).size)


def build(config: IndexConfig, vectors: np.ndarray, threads: int) -> tuple[TunedDenseIndex, float]:
    faiss.omp_set_num_threads(threads)
    index = TunedDenseIndex(vectors.shape[1], config)
    start = time.perf_counter()
    index.rebuild(np.arange(len(vectors), dtype=np.int64), vectors)
    seconds = time.perf_counter() - start
    faiss.omp_set_num_threads(1)
    return index, seconds


# -- measurement -----------------------------------------------------------------------------


def recall_at_k(found: np.ndarray, truth: np.ndarray) -> float:
    k = truth.shape[1]
    return float(np.mean([len(set(f[f >= 0]) & set(t)) / k for f, t in zip(found, truth, strict=True)]))


def timed_pass(index: DenseIndex, queries: np.ndarray) -> float:
    start = time.perf_counter()
    for query in queries:
        index.search(query, TOP_K)
    return time.perf_counter() - start


def _paired_rounds(
    rounds: int, n: int, one_round: Callable[[], tuple[float, float]]
) -> tuple[dict[str, float], list[float]]:
    """Medians over ``rounds`` of one_round's (Flat seconds, other seconds) for ``n`` queries, and the ratios."""
    flat_qps, other_qps, ratios = [], [], []
    for _ in range(rounds):
        t_flat, t_other = one_round()
        flat_qps.append(n / t_flat)
        other_qps.append(n / t_other)
        ratios.append(t_flat / t_other)
    medians = {
        "qps": statistics.median(other_qps),
        "flat_qps": statistics.median(flat_qps),
        "speedup_vs_flat": statistics.median(ratios),
    }
    return medians, ratios


def paired_single(
    flat: DenseIndex, other: DenseIndex, queries: np.ndarray, rounds: int, chunk: int = 64
) -> dict[str, float]:
    """Single-query q/s of ``other`` and of Flat, passes alternating chunk by chunk; medians over rounds."""

    def one_round() -> tuple[float, float]:
        t_flat = t_other = 0.0
        for start in range(0, len(queries), chunk):
            block = queries[start : start + chunk]
            t_flat += timed_pass(flat, block)
            t_other += timed_pass(other, block)
        return t_flat, t_other

    medians, ratios = _paired_rounds(rounds, len(queries), one_round)
    return {**medians, "speedup_min": min(ratios), "speedup_max": max(ratios)}


def paired_batch(flat: TunedDenseIndex, other: TunedDenseIndex, queries: np.ndarray, rounds: int) -> dict[str, float]:
    """All queries in one FAISS call, single thread; Flat and ``other`` alternate; medians."""

    def one_round() -> tuple[float, float]:
        t_flat, _ = timed(lambda: flat.raw_search(queries, TOP_K))
        t_other, _ = timed(lambda: other.raw_search(queries, TOP_K))
        return t_flat, t_other

    return _paired_rounds(rounds, len(queries), one_round)[0]


def rounded(row: dict) -> dict:
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}


# -- part 1: real vectors ----------------------------------------------------------------------


def run_real(
    vectors: np.ndarray, queries: np.ndarray, configs: list[IndexConfig], efs: list[int], args: argparse.Namespace
) -> dict:
    flat, flat_build = build(IndexConfig("Flat"), vectors, args.build_threads)
    truth = flat.raw_search(queries, TOP_K)
    rows = []
    for config in configs:
        index, seconds = build(config, vectors, args.build_threads)
        log(f"real: built {config.name} in {seconds:.1f} s")
        for ef in config.efs or efs:
            index.set_search(ef_search=ef)
            recall = recall_at_k(index.raw_search(queries, TOP_K), truth)
            single = paired_single(flat, index, queries, args.rounds)
            batch = paired_batch(flat, index, queries, args.rounds)
            row = {
                "config": config.name,
                "ef_search": ef,
                "recall_at_100": recall,
                "single_qps": single["qps"],
                "single_flat_qps": single["flat_qps"],
                "single_speedup": single["speedup_vs_flat"],
                "single_speedup_min": single["speedup_min"],
                "single_speedup_max": single["speedup_max"],
                "batch_qps": batch["qps"],
                "batch_flat_qps": batch["flat_qps"],
                "batch_speedup": batch["speedup_vs_flat"],
                "build_s": seconds,
                "bytes": index.size_bytes(),
            }
            rows.append(rounded(row))
            log(
                f"real: {config.name} ef={ef} recall={recall:.4f} single {single['qps']:.0f} q/s "
                f"({single['speedup_vs_flat']:.2f}x flat) batch {batch['speedup_vs_flat']:.2f}x flat"
            )
        del index
    hits = [r for r in rows if r["recall_at_100"] >= args.target_recall and r["single_speedup"] >= args.target_speedup]
    robust = [r for r in hits if r["single_speedup_min"] >= args.target_speedup]
    return {
        "n": len(vectors),
        "queries": len(queries),
        "flat": {"build_s": round(flat_build, 3), "bytes": flat.size_bytes()},
        "rows": rows,
        "target": {
            "recall_at_100": args.target_recall,
            "single_speedup": args.target_speedup,
            "met_by": [{"config": r["config"], "ef_search": r["ef_search"]} for r in hits],
            "met_in_every_round_by": [{"config": r["config"], "ef_search": r["ef_search"]} for r in robust],
        },
    }


# -- part 2: scaling ---------------------------------------------------------------------------


def predicted_hnsw_seconds(history: list[tuple[int, float]], n: int) -> float | None:
    """Extrapolate HNSW build time as N log N from the largest size built so far."""
    if not history:
        return None
    n0, t0 = history[-1]
    return t0 * (n / n0) * (math.log(n) / math.log(n0))


def qps_rounds(index: DenseIndex, queries: np.ndarray, rounds: int) -> float:
    return statistics.median(len(queries) / timed_pass(index, queries) for _ in range(rounds))


def measure_ivf(
    factory: str, data: np.ndarray, queries: np.ndarray, truth: np.ndarray, args: argparse.Namespace
) -> dict:
    """Build one IVF index and sweep nprobe; the chosen nprobe is the smallest near the best recall."""
    ivf, seconds = build(IndexConfig(factory), data, args.build_threads)
    sweep = []
    for nprobe in args.nprobes:
        ivf.set_search(nprobe=nprobe)
        recall = recall_at_k(ivf.raw_search(queries, TOP_K), truth)
        qps = qps_rounds(ivf, queries[: args.timing_queries], args.rounds)
        sweep.append(rounded({"nprobe": nprobe, "recall_at_100": recall, "qps": qps}))
    best = max(r["recall_at_100"] for r in sweep)
    chosen = next(r for r in sweep if r["recall_at_100"] >= best - 0.005)
    log(
        f"scaling N={len(data)}: {factory} built in {seconds:.1f} s; "
        + ", ".join(f"nprobe={r['nprobe']}: {r['recall_at_100']:.3f} @ {r['qps']:.0f} q/s" for r in sweep)
    )
    return {
        "config": factory,
        "build_s": round(seconds, 3),
        "bytes": ivf.size_bytes(),
        "sweep": sweep,
        "chosen_nprobe": chosen["nprobe"],
    }


def run_scaling(real: np.ndarray, queries: np.ndarray, args: argparse.Namespace) -> dict:
    sizes = sorted(args.sizes)
    extra = max(0, max(sizes) - len(real))
    log(f"scaling: drawing {extra} synthetic vectors")
    pool = np.concatenate([real, synthetic_vectors(real, extra, args.seed)]) if extra else real
    timing_queries = queries[: args.timing_queries]
    hnsw_history: list[tuple[int, float]] = []
    results = []
    for n in sizes:
        data = pool[:n]
        flat, flat_build = build(IndexConfig("Flat"), data, args.build_threads)
        faiss.omp_set_num_threads(args.build_threads)
        truth = flat.raw_search(queries, TOP_K)
        faiss.omp_set_num_threads(1)
        synthetic_share = float(np.mean(truth >= len(real)))
        flat_qps = qps_rounds(flat, timing_queries, args.rounds)
        entry: dict = {
            "n": n,
            "synthetic_share_of_flat_top100": round(synthetic_share, 4),
            "flat": {"build_s": round(flat_build, 3), "bytes": flat.size_bytes(), "qps": round(flat_qps, 2)},
        }
        log(f"scaling N={n}: flat {flat_qps:.1f} q/s, {synthetic_share:.1%} of its top-100 synthetic")
        del flat

        predicted = predicted_hnsw_seconds(hnsw_history, n)
        if predicted is not None and predicted > args.hnsw_budget:
            entry["hnsw"] = {"skipped": f"predicted build {predicted:.0f} s > budget {args.hnsw_budget:.0f} s"}
            log(f"scaling N={n}: HNSW skipped ({entry['hnsw']['skipped']})")
        else:
            hnsw, seconds = build(IndexConfig.parse(args.hnsw), data, args.build_threads)
            hnsw_history.append((n, seconds))
            sweep = []
            for ef in args.scaling_efs:
                hnsw.set_search(ef_search=ef)
                recall = recall_at_k(hnsw.raw_search(queries, TOP_K), truth)
                qps = qps_rounds(hnsw, timing_queries, args.rounds)
                sweep.append(rounded({"ef_search": ef, "recall_at_100": recall, "qps": qps}))
            entry["hnsw"] = {
                "config": args.hnsw,
                "build_s": round(seconds, 3),
                "bytes": hnsw.size_bytes(),
                "sweep": sweep,
            }
            log(
                f"scaling N={n}: HNSW built in {seconds:.1f} s; "
                + ", ".join(f"ef={r['ef_search']}: {r['recall_at_100']:.3f} @ {r['qps']:.0f} q/s" for r in sweep)
            )
            del hnsw

        entry["ivf"] = [measure_ivf(factory, data, queries, truth, args) for factory in args.ivf]
        results.append(entry)
    return {"sizes": sizes, "real_n": len(real), "timing_queries": len(timing_queries), "results": results}


# -- report ------------------------------------------------------------------------------------


def plot_scaling(scaling: dict, path: Path) -> None:
    rows = scaling["results"]
    fig = new_figure((11, 8))
    axes = fig.subplots(2, 2)
    (ax_build, ax_mem), (ax_qps, ax_recall) = axes
    series: dict[str, tuple[list, dict[str, list]]] = {}

    def add(label: str, n: int, build_s: float, mb: float, qps: float, recall: float) -> None:
        xs, ys = series.setdefault(label, ([], {"build": [], "mem": [], "qps": [], "recall": []}))
        xs.append(n)
        for key, value in (("build", build_s), ("mem", mb), ("qps", qps), ("recall", recall)):
            ys[key].append(value)

    for row in rows:
        n = row["n"]
        add("Flat", n, row["flat"]["build_s"], row["flat"]["bytes"] / 2**20, row["flat"]["qps"], 1.0)
        hnsw = row["hnsw"]
        if "sweep" in hnsw:
            for point in hnsw["sweep"]:
                label = f"{hnsw['config'].split(':')[0]} efSearch={point['ef_search']}"
                add(label, n, hnsw["build_s"], hnsw["bytes"] / 2**20, point["qps"], point["recall_at_100"])
        for ivf in row["ivf"]:
            point = next(p for p in ivf["sweep"] if p["nprobe"] == ivf["chosen_nprobe"])
            add(
                f"{ivf['config']} (tuned nprobe)",
                n,
                ivf["build_s"],
                ivf["bytes"] / 2**20,
                point["qps"],
                point["recall_at_100"],
            )

    for label, (xs, ys) in series.items():
        style = {"marker": "o", "linestyle": "--" if "efSearch" in label else "-"}
        ax_build.plot(xs, ys["build"], label=label, **style)
        ax_mem.plot(xs, ys["mem"], label=label, **style)
        ax_qps.plot(xs, ys["qps"], label=label, **style)
        ax_recall.plot(xs, ys["recall"], label=label, **style)
    titles = (
        (ax_build, "build time incl. training (s, 2 threads)", True),
        (ax_mem, "serialized index size (MiB)", True),
        (ax_qps, "single-thread queries/s, top-100", True),
        (ax_recall, "recall@100 vs Flat", False),
    )
    for ax, title, log_y in titles:
        ax.set_xscale("log")
        if log_y:
            ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("N vectors")
        ax.grid(True, which="both", alpha=0.3)
    ax_recall.legend(fontsize=7)
    fig.suptitle(f"FAISS indexes vs N (first {scaling['real_n']:,} vectors real, the rest synthetic)")
    fig.tight_layout()
    save_png(fig, path, dpi=110)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=list(REAL_CONFIGS), help="part 1 specs FACTORY[:efc=N][:kf=X]")
    parser.add_argument("--efs", nargs="+", type=int, default=[64, 128, 256, 512, 1024], help="part 1 efSearch sweep")
    parser.add_argument("--sizes", nargs="+", type=int, default=[55_350, 100_000, 250_000, 500_000, 1_000_000])
    parser.add_argument("--hnsw", default="HNSW32:efc=40", help="HNSW spec for part 2")
    parser.add_argument("--scaling-efs", nargs="+", type=int, default=[128, 256, 512])
    parser.add_argument("--ivf", nargs="+", default=["IVF1024,PQ48", "IVF1024,SQ8"], help="IVF factory strings, part 2")
    parser.add_argument("--nprobes", nargs="+", type=int, default=[8, 16, 32, 64, 128])
    parser.add_argument("--rounds", type=int, default=5, help="timing repeats (medians)")
    parser.add_argument("--timing-queries", type=int, default=200, help="part 2 questions timed per pass")
    parser.add_argument("--build-threads", type=int, default=2)
    parser.add_argument(
        "--hnsw-budget", type=float, default=900.0, help="skip an HNSW build predicted to take longer (s)"
    )
    parser.add_argument("--target-recall", type=float, default=0.99)
    parser.add_argument("--target-speedup", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-real", action="store_true")
    parser.add_argument("--skip-scaling", action="store_true")
    parser.add_argument("--quick", action="store_true", help="tiny smoke run; output goes to the cache folder")
    parser.add_argument(
        "--out-dir", type=Path, default=None, help="default docs/benchmarks/vector_index (cache folder with --quick)"
    )
    args = parser.parse_args()
    if args.quick:
        args.configs, args.efs = ["HNSW32:efc=40", "HNSW32_SQ8,RFlat:efc=40:kf=2"], [128, 256]
        args.sizes, args.scaling_efs, args.nprobes = [20_000, 60_000], [128], [16, 64]
        args.rounds, args.timing_queries, args.ivf = 1, 50, ["IVF256,PQ48", "IVF256,SQ8"]
    return args


def main() -> None:
    args = parse_args()
    out_dir = args.out_dir or (
        cache_dir() / "faiss_benchmark_quick" if args.quick else Path("docs/benchmarks/vector_index")
    )
    started = time.time()
    faiss.omp_set_num_threads(1)
    vectors, queries = real_vectors()
    log(f"{len(vectors)} passage vectors, {len(queries)} question vectors")
    report: dict = {
        "environment": {
            "cpu": cpu_name(),
            "faiss": faiss.__version__,
            "faiss_compile_options": faiss.get_compile_options(),
            "build_threads": args.build_threads,
            "query_threads": 1,
            "rounds": args.rounds,
            "seed": args.seed,
            "date": time.strftime("%Y-%m-%d"),
        },
        "real": None,
        "scaling": None,
    }
    if not args.skip_real:
        configs = [IndexConfig.parse(spec) for spec in args.configs]
        report["real"] = run_real(vectors, queries, configs, args.efs, args)
    if not args.skip_scaling:
        report["scaling"] = run_scaling(vectors, queries, args)
    report["environment"]["total_minutes"] = round((time.time() - started) / 60, 1)
    command = " ".join(["python -m benchmarks.vector_index.faiss_benchmark", *sys.argv[1:]])
    report["command"] = command
    atomic_write_text(out_dir / "faiss.json", json.dumps(report, indent=2) + "\n")
    if report["real"] and report["scaling"]:
        plot_scaling(report["scaling"], out_dir / "faiss_scaling.png")
        atomic_write_text(out_dir / "faiss.md", render_markdown(report, command, "faiss_scaling.png"))
    log(f"done in {report['environment']['total_minutes']} min; wrote {out_dir}")


if __name__ == "__main__":
    main()
