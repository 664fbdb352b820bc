"""Write docs/benchmarks/scale.md and its plots from docs/benchmarks/scale.json.

    python -m benchmarks.scale.scale_report

Each curve is also extrapolated to 21M passages (DPR's Wikipedia): sizes and memory with a
straight line through the measured sizes from 250k on (they grow linearly), times and queries/s
with a power law fitted on the same points (log-log least squares)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import REPO_ROOT
from dpr_components.evaluation.figures import new_figure, save_png
from dpr_components.evaluation.tables import markdown_table, table_header, table_row
from dpr_components.utils.atomic_files import atomic_write_text

DOCS = REPO_ROOT / "docs" / "benchmarks"
TARGET = 21_000_000
FIT_FROM = 250_000

Getter = Callable[[dict[str, Any]], float | None]


def get(*path: str) -> Getter:
    """A reader of ``size_results[path[0]][path[1]]...`` (None when missing or skipped)."""

    def read(entry: dict[str, Any]) -> float | None:
        value: Any = entry
        for key in path:
            if not isinstance(value, dict) or key not in value:
                return None
            value = value[key]
        return float(value) if isinstance(value, (int, float)) else None

    return read


def total_disk(entry: dict[str, Any]) -> float | None:
    parts = [get("write", "sqlite_mb")(entry), get("build_bm25", "disk_mb")(entry), get("build_flat", "disk_mb")(entry)]
    return None if None in parts else sum(parts)  # type: ignore[arg-type]


# name -> (label, getter, unit, kind) ; kind "linear" (sizes, memory) or "power" (times, rates)
SERIES: dict[str, tuple[str, Getter, str, str]] = {
    "write_s": ("write_documents into SQLite", get("write", "seconds"), "s", "power"),
    "bm25_build_s": ("BM25 build + save", get("build_bm25", "seconds"), "s", "power"),
    "flat_build_s": ("Flat build + save", get("build_flat", "seconds"), "s", "power"),
    "hnsw_build_s": ("HNSW32 build", get("variant_hnsw", "build_s"), "s", "power"),
    "ivfpq_build_s": ("IVF-PQ build (≤1,024 lists)", get("variant_ivfpq", "build_s"), "s", "power"),
    "bm25_peak_mb": ("BM25 build", get("build_bm25", "vm_hwm_mb"), "MiB", "linear"),
    "flat_peak_mb": ("Flat build", get("build_flat", "vm_hwm_mb"), "MiB", "linear"),
    "hnsw_peak_mb": ("HNSW32 build (vectors in RAM)", get("variant_hnsw", "vm_hwm_mb"), "MiB", "linear"),
    "ivfpq_peak_mb": ("IVF-PQ build (vectors in RAM)", get("variant_ivfpq", "vm_hwm_mb"), "MiB", "linear"),
    "serve_peak_mb": ("serving (Flat + BM25, queries)", get("serve", "vm_hwm_mb"), "MiB", "linear"),
    "sqlite_mb": ("SQLite (text, meta, vectors)", get("write", "sqlite_mb"), "MiB", "linear"),
    "bm25_mb": ("BM25 index", get("build_bm25", "disk_mb"), "MiB", "linear"),
    "flat_mb": ("FAISS Flat", get("build_flat", "disk_mb"), "MiB", "linear"),
    "hnsw_mb": ("FAISS HNSW32", get("variant_hnsw", "disk_mb"), "MiB", "linear"),
    "ivfpq_mb": ("FAISS IVF-PQ", get("variant_ivfpq", "disk_mb"), "MiB", "linear"),
    "total_mb": ("store folder (SQLite + BM25 + Flat)", total_disk, "MiB", "linear"),
    "bm25_qps": ("BM25 (store, top 100)", get("serve", "bm25_store", "per_s"), "q/s", "power"),
    "flat_qps": ("dense Flat (store, top 100)", get("serve", "dense_store", "per_s"), "q/s", "power"),
    "hnsw_qps": (
        "dense HNSW32 ef 128 (index; recall falls with N)",
        get("variant_hnsw", "search", "per_s"),
        "q/s",
        "power",
    ),
    "ivfpq_qps": (
        "dense IVF-PQ nprobe 64, 1,024 lists (index)",
        get("variant_ivfpq", "search", "per_s"),
        "q/s",
        "power",
    ),
    "hybrid_qps": ("exact hybrid, one by one", get("serve", "hybrid_single", "per_s"), "q/s", "power"),
    "hybrid_batch_qps": ("exact hybrid, batches of 32", get("serve", "hybrid_batch", "per_s"), "q/s", "power"),
    "open_s": (
        "open + first BM25 + first dense search",
        lambda e: _sum(e, ("serve", "first_bm25_s"), ("serve", "first_dense_s")),
        "s",
        "power",
    ),
    "verify_s": (
        "checksum check at opening (both)",
        lambda e: _sum(e, ("serve", "verify_bm25_s"), ("serve", "verify_dense_s")),
        "s",
        "power",
    ),
    "rehash_s": (
        "full re-hash (both; a copied folder)",
        lambda e: _sum(e, ("serve", "rehash_bm25_s"), ("serve", "rehash_dense_s")),
        "s",
        "power",
    ),
    "open_heap_mb": (
        "heap after opening (both indexes loaded)",
        get("serve", "memory_after_open", "anon_mb"),
        "MiB",
        "linear",
    ),
    "dense_add_s": ("FAISS catch-up of 1,000 passages after opening", get("add", "dense_catch_up_s"), "s", "power"),
    "dense_add_search_s": ("first dense search after it (autosave)", get("add", "first_dense_search_s"), "s", "power"),
}
PLOTS = {
    "scale_build.png": (
        "Build time",
        ["write_s", "bm25_build_s", "flat_build_s", "hnsw_build_s", "ivfpq_build_s"],
        "seconds",
    ),
    "scale_memory.png": (
        "Peak memory (RSS of the process)",
        ["bm25_peak_mb", "flat_peak_mb", "hnsw_peak_mb", "ivfpq_peak_mb", "serve_peak_mb"],
        "MiB",
    ),
    "scale_disk.png": ("On-disk size", ["sqlite_mb", "bm25_mb", "flat_mb", "hnsw_mb", "ivfpq_mb", "total_mb"], "MiB"),
    "scale_qps.png": (
        "Queries per second (one thread)",
        ["bm25_qps", "flat_qps", "hnsw_qps", "ivfpq_qps", "hybrid_qps", "hybrid_batch_qps"],
        "queries/s",
    ),
}


def _milliseconds(getter: Getter) -> Getter:
    def read(entry: dict[str, Any]) -> float | None:
        value = getter(entry)
        return None if value is None else value * 1000

    return read


def _sum(entry: dict[str, Any], *paths: tuple[str, ...]) -> float | None:
    values = [get(*p)(entry) for p in paths]
    return None if None in values else sum(values)  # type: ignore[arg-type]


def points(results: dict, name: str) -> tuple[np.ndarray, np.ndarray]:
    getter = SERIES[name][1]
    entries = results["sizes"]
    if name.startswith("dense_add"):
        # Only the sizes measured with the same store code as the largest one: a curve, not a mix of versions.
        codes = {n: e.get("add", {}).get("store_code") for n, e in entries.items() if "add" in e}
        newest = codes[max(codes, key=int)] if codes else None
        entries = {n: e for n, e in entries.items() if codes.get(n) == newest}
    pairs = sorted((int(n), getter(entry)) for n, entry in entries.items())
    pairs = [(n, v) for n, v in pairs if v is not None and v > 0]
    return np.array([n for n, _ in pairs], dtype=float), np.array([v for _, v in pairs], dtype=float)


def extrapolate(results: dict, name: str, target: int = TARGET) -> tuple[float | None, str]:
    """The series' value at ``target`` and how it was fitted."""
    sizes, values = points(results, name)
    keep = sizes >= FIT_FROM
    sizes, values = sizes[keep], values[keep]
    if len(sizes) < 2:
        return None, "too few sizes"
    if SERIES[name][3] == "linear":
        slope, intercept = np.polyfit(sizes, values, 1)
        return float(intercept + slope * target), "linear"
    exponent, log_scale = np.polyfit(np.log(sizes), np.log(values), 1)
    return float(np.exp(log_scale) * target**exponent), f"N^{exponent:.2f}"


def per_passage_bytes(results: dict, name: str) -> float | None:
    sizes, values = points(results, name)
    keep = sizes >= FIT_FROM
    if keep.sum() < 2:
        return None
    slope, _ = np.polyfit(sizes[keep], values[keep], 1)
    return float(slope * 2**20)


def plot(results: dict, out_dir: Path) -> None:
    for filename, (title, names, unit) in PLOTS.items():
        fig = new_figure((7, 4.5))
        ax = fig.subplots()
        for name in names:
            sizes, values = points(results, name)
            if len(sizes):
                ax.plot(sizes, values, marker="o", label=SERIES[name][0])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("passages (N)")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        save_png(fig, out_dir / filename, dpi=100)


def fmt(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "–"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def table(results: dict, header: list[str], rows: list[tuple[str, Callable[[dict], str]]]) -> list[str]:
    """One row per size; ``rows`` are (column title, cell maker) pairs after the size column."""
    cells = [
        [f"{int(n):,}", *[cell(results["sizes"][n]) for _, cell in rows]] for n in sorted(results["sizes"], key=int)
    ]
    return header + markdown_table(["N", *[title for title, _ in rows]], cells, "r" * (len(rows) + 1)) + [""]


def cell(getter: Getter, digits: int = 1, skipped: str | None = None) -> Callable[[dict], str]:
    def make(entry: dict) -> str:
        if skipped and "skipped" in entry.get(skipped, {}):
            return "skipped"
        return fmt(getter(entry), digits)

    return make


def pair(a: Getter, b: Getter, digits: int) -> Callable[[dict], str]:
    """A cell showing two values as ``a / b``."""
    return lambda entry: f"{fmt(a(entry), digits)} / {fmt(b(entry), digits)}"


def report(results: dict) -> str:
    s = results.get("settings", {})
    lines = [
        "# Scaling the embedded store: 55k to 2M passages",
        "",
        "Made by (from the repository root; each measurement in a fresh single-threaded child process):",
        "",
        "```bash",
        "nice -n 5 python -m benchmarks.scale.scale_benchmark prep",
        f"nice -n 5 python -m benchmarks.scale.scale_benchmark run --sizes {','.join(sorted(results['sizes'], key=int))} "
        f"--query-budget-s {s.get('query_budget_s', 10):g} --max-build-s 600",
        "# HNSW32 at 2M, skipped by the 600 s limit above (predicted 827 s), measured afterwards:",
        "nice -n 5 python -m benchmarks.scale.scale_benchmark run --sizes 2000000 --steps variant_hnsw --redo variant_hnsw "
        f"--query-budget-s {s.get('query_budget_s', 10):g} --max-build-s 1200",
        "# Store changes (vector counter, checksums verified once, memory-mapped indexes): the store steps again,",
        "# the previous results kept under 'before' in scale.json (the section 'Before and after' below):",
        "nice -n 5 python -m benchmarks.scale.scale_benchmark run --sizes 55350,250000,500000,1000000,2000000 "
        "--steps write,build_bm25,build_flat,serve,add --redo write,build_bm25,build_flat,serve,add --keep-before "
        f"--query-budget-s {s.get('query_budget_s', 10):g} --max-build-s 600",
        "nice -n 5 python -m benchmarks.scale.scale_benchmark run --sizes 55350,250000,500000,1000000,2000000 --steps serve_plain "
        f"--query-budget-s {s.get('query_budget_s', 10):g}",
        "# The FAISS delta: per size, on a fresh copy of the saved store each time (opened once, so its files are hashed),",
        "# the add step with the previous commit's code (a checkout in OLD), then with this code, the first kept as 'before_delta':",
        "nice -n 5 python -m benchmarks.scale.scale_benchmark run --sizes N --steps add --redo add --code OLD",
        "nice -n 5 python -m benchmarks.scale.scale_benchmark run --sizes N --steps add --redo add --keep-before --before-key before_delta",
        "python -m benchmarks.scale.scale_report",
        "```",
        "",
        f"Machine: {results.get('machine', '?')}, shared with other jobs (load average per step in scale.json):",
        "timings vary by up to ~40% between runs; one thread everywhere (OMP/BLAS/FAISS/torch).",
        "",
        "- **Passages**: the pool's 55,350 real DPR passages, then synthetic ones: the pool recombined (title and first",
        "  half of one passage, second half of another, `benchmarks.bm25.bm25_incremental.synthetic_passages`), all distinct.",
        "- **Vectors** (384-d, all-MiniLM-L6-v2): the real pool vectors from the embedding cache for the first 55,350;",
        "  beyond, synthetic unit vectors drawn from a Gaussian with the real vectors' mean and covariance",
        "  (`benchmarks.vector_index.faiss_benchmark.synthetic_vectors`): encoding 2M passages here would take days.",
        "- **Queries**: the 655 NQ dev questions (BM25) and their vectors, encoded once beforehand (dense, hybrid).",
        f"- queries/s: one query per call, top {s.get('top_k', 100)}, warm, after 3 warm-up queries, up to "
        f"{s.get('query_budget_s', '?')} s per measurement; exact hybrid: union of both top-{s.get('hybrid_candidates', 2000)} lists,",
        "  `hybrid_search` one by one and `hybrid_search_batch` 32 at a time. Store q/s include reading the documents from SQLite.",
        "- Peak memory: the child process's high-water mark (VmHWM). Disk: bytes of the files (manifests included).",
        "",
        "![build time](scale_build.png) ![peak memory](scale_memory.png)",
        "![disk](scale_disk.png) ![queries/s](scale_qps.png)",
        "",
    ]
    build_intro = "Seconds and peak MiB of the process. The Flat/BM25 builds read everything from SQLite, build and save with checksums."
    lines += table(
        results,
        ["## Build", "", build_intro, ""],
        [
            ("write to SQLite s", cell(get("write", "seconds"))),
            ("passages/s", cell(get("write", "per_s"), 0)),
            ("BM25 s", cell(get("build_bm25", "seconds"))),
            ("BM25 peak", cell(get("build_bm25", "vm_hwm_mb"), 0)),
            ("Flat s", cell(get("build_flat", "seconds"))),
            ("Flat peak", cell(get("build_flat", "vm_hwm_mb"), 0)),
            ("HNSW32 s", cell(get("variant_hnsw", "build_s"), 1, "variant_hnsw")),
            ("HNSW32 peak", cell(get("variant_hnsw", "vm_hwm_mb"), 0, "variant_hnsw")),
            ("IVF-PQ s", cell(get("variant_ivfpq", "build_s"), 1, "variant_ivfpq")),
            ("IVF-PQ peak", cell(get("variant_ivfpq", "vm_hwm_mb"), 0, "variant_ivfpq")),
        ],
    )
    lines += [
        "HNSW32 and IVF-PQ are built standalone by the store's `DenseIndex` from the same vectors held in memory (their",
        "peak includes the input vectors: N x 1.5 KiB). IVF-PQ is `IVF<nlist>,PQ48`, nlist ~ 4·sqrt(N) (a power of two):",
        ", ".join(
            f"{int(n):,}: {e['variant_ivfpq']['factory']}"
            for n, e in sorted(results["sizes"].items(), key=lambda x: int(x[0]))
            if "factory" in e.get("variant_ivfpq", {})
        )
        + ".",
        "",
    ]
    lines += table(
        results,
        ["## On-disk size (MiB)", ""],
        [
            ("SQLite", cell(get("write", "sqlite_mb"), 0)),
            ("BM25", cell(get("build_bm25", "disk_mb"), 0)),
            ("Flat", cell(get("build_flat", "disk_mb"), 0)),
            ("store total", cell(total_disk, 0)),
            ("HNSW32", cell(get("variant_hnsw", "disk_mb"), 0, "variant_hnsw")),
            ("IVF-PQ", cell(get("variant_ivfpq", "disk_mb"), 0, "variant_ivfpq")),
        ],
    )
    lines += table(
        results,
        [
            "## Opening a saved store",
            "",
            "A new process: construct the store (lazy: touches nothing), then the first BM25 search (loads and checks",
            "the BM25 folder) and the first dense search (loads and checks the FAISS folder), with the default settings",
            "(indexes memory-mapped). The checksum check is timed again on its own: as an opening does it (files hashed",
            "on this machine before, by the save, are not hashed again) and fully re-hashed (a folder copied from",
            "elsewhere, checked once). Files are in the page cache (warm); a cold disk adds its read time.",
            "*heap*: the process's anonymous memory after both searches; *RSS* adds the mapped index pages it touched.",
            "",
        ],
        [
            ("first BM25 search s", cell(get("serve", "first_bm25_s"), 2)),
            ("first dense search s", cell(get("serve", "first_dense_s"), 2)),
            ("checksum check ms", cell(_milliseconds(SERIES["verify_s"][1]), 1)),
            ("full re-hash s", cell(lambda e: _sum(e, ("serve", "rehash_bm25_s"), ("serve", "rehash_dense_s")), 2)),
            ("heap after opening MiB", cell(get("serve", "memory_after_open", "anon_mb"), 0)),
            ("RSS after opening MiB", cell(get("serve", "memory_after_open", "rss_mb"), 0)),
            ("serving peak MiB", cell(get("serve", "vm_hwm_mb"), 0)),
        ],
    )
    lines += table(
        results,
        [
            "### Memory-mapped (default) vs read into the heap (`memory_map=False`)",
            "",
            "The same opening and queries in another fresh process with `memory_map=False` (step `serve_plain`, run after",
            "the adding step: on N + 2,000 passages): each cell is mapped / plain. Both open with the vector counter and",
            "the checksum record; plain reads both indexes into the heap. The serving peak counts the mapped pages the",
            "queries touched (page cache: shared, evictable), hence the same peak; the heap is what differs.",
            "",
        ],
        [
            (
                "open + first searches s",
                pair(
                    SERIES["open_s"][1],
                    lambda e: _sum(e, ("serve_plain", "first_bm25_s"), ("serve_plain", "first_dense_s")),
                    2,
                ),
            ),
            (
                "heap after opening MiB",
                pair(
                    get("serve", "memory_after_open", "anon_mb"), get("serve_plain", "memory_after_open", "anon_mb"), 0
                ),
            ),
            ("serving peak MiB", pair(get("serve", "vm_hwm_mb"), get("serve_plain", "vm_hwm_mb"), 0)),
            ("BM25 q/s", pair(get("serve", "bm25_store", "per_s"), get("serve_plain", "bm25_store", "per_s"), 0)),
            ("Flat q/s", pair(get("serve", "dense_store", "per_s"), get("serve_plain", "dense_store", "per_s"), 1)),
            (
                "hybrid q/s",
                pair(get("serve", "hybrid_single", "per_s"), get("serve_plain", "hybrid_single", "per_s"), 1),
            ),
        ],
    )
    lines += table(
        results,
        ["## Queries per second (one thread)", ""],
        [
            ("BM25 store", cell(get("serve", "bm25_store", "per_s"), 0)),
            ("BM25 index", cell(get("serve", "bm25_index", "per_s"), 0)),
            ("Flat store", cell(get("serve", "dense_store", "per_s"), 1)),
            ("Flat index", cell(get("serve", "dense_index", "per_s"), 1)),
            ("Flat batch 32", cell(get("serve", "dense_index_batch", "per_s"), 1)),
            ("HNSW32 ef128", cell(get("variant_hnsw", "search", "per_s"), 0, "variant_hnsw")),
            ("recall@100", cell(get("variant_hnsw", "recall_at_100"), 3, "variant_hnsw")),
            ("IVF-PQ np64", cell(get("variant_ivfpq", "search", "per_s"), 0, "variant_ivfpq")),
            ("recall@100", cell(get("variant_ivfpq", "recall_at_100"), 3, "variant_ivfpq")),
            ("hybrid", cell(get("serve", "hybrid_single", "per_s"), 1)),
            ("hybrid batch 32", cell(get("serve", "hybrid_batch", "per_s"), 1)),
        ],
    )
    lines += [
        "*store*: through `EmbeddedDocumentStore` (Documents read from SQLite); *index*: the index object alone.",
        "recall@100: share of the exact top 100 (Flat) found, mean over 200 questions (on synthetic vectors beyond",
        "55k, recall of approximate indexes is lower than on real vectors: docs/benchmarks/faiss.md).",
        "",
    ]
    lines += table(
        results,
        [
            f"## Adding {s.get('added', 1000):,} passages to the saved store",
            "",
            "A new process opens the store (autosave on, the default), searches once, then writes the passages with vectors;",
            "then, in the same process, a second batch as large (write, FAISS and BM25 catch-up, save()).",
            "",
        ],
        [
            ("write_documents s", cell(get("add", "write_s"), 3)),
            ("BM25 catch-up s", cell(get("add", "bm25_catch_up_s"), 3)),
            ("first BM25 search s", cell(get("add", "first_bm25_search_s"), 3)),
            ("FAISS catch-up s", cell(get("add", "dense_catch_up_s"), 3)),
            ("first dense search s", cell(get("add", "first_dense_search_s"), 2)),
            ("save() s", cell(get("add", "save_s"), 2)),
            ("2nd batch: FAISS catch-up s", cell(get("add", "second_dense_catch_up_s"), 3)),
            ("BM25 catch-up s", cell(get("add", "second_bm25_catch_up_s"), 3)),
            ("save() s", cell(get("add", "second_save_s"), 2)),
            ("store code", lambda e: str(e.get("add", {}).get("store_code", "–"))),
        ],
    )
    lines += [
        "*store code*: digest of the store's source files that made the column (scale.json). With the FAISS delta",
        "(the section below) new vectors go to a small exact index saved apart, and the mapped main index is neither",
        "read into memory nor rewritten; without it (older columns) the first FAISS catch-up after opening read the",
        "mapped index into memory and every save rewrote the whole FAISS folder, both linear in N. BM25 is saved only",
        "once it is >1% behind its saved copy or by save(), which rewrites it whole (the save() rows).",
        "",
    ]
    lines += delta_before_after(results)
    lines += before_after(results)
    lines += table(
        results,
        [
            "## Memory-mapping (standalone loads in fresh processes)",
            "",
            "Anonymous memory (heap, MiB) added by reading the saved file, plain vs memory-mapped, and single-query q/s after.",
            "FAISS: `faiss.read_index(path, IO_FLAG_MMAP_IFC)` (flat codes, also HNSW's vectors and graph in FAISS 1.15) or",
            "`IO_FLAG_MMAP` (IVF lists); BM25: `BM25Index.read_files` with `np.load(mmap_mode='r')` (vocabulary dict stays in",
            "the heap). Mapped pages count as page cache (shared, reclaimable), not heap.",
            "",
        ],
        [
            ("Flat heap plain", cell(get("load_flat_plain", "anon_added_mb"), 0)),
            ("mapped", cell(get("load_flat_mmap", "anon_added_mb"), 0)),
            (
                "q/s plain/mapped",
                pair(get("load_flat_plain", "search", "per_s"), get("load_flat_mmap", "search", "per_s"), 1),
            ),
            ("BM25 heap plain", cell(get("load_bm25_plain", "anon_added_mb"), 0)),
            ("mapped", cell(get("load_bm25_mmap", "anon_added_mb"), 0)),
            (
                "q/s plain/mapped",
                pair(get("load_bm25_plain", "search", "per_s"), get("load_bm25_mmap", "search", "per_s"), 0),
            ),
            ("HNSW heap plain", cell(get("variant_hnsw", "load_plain", "anon_added_mb"), 0, "variant_hnsw")),
            ("mapped", cell(get("variant_hnsw", "load_mmap", "anon_added_mb"), 0, "variant_hnsw")),
            (
                "q/s plain/mapped",
                pair(
                    get("variant_hnsw", "load_plain", "search", "per_s"),
                    get("variant_hnsw", "load_mmap", "search", "per_s"),
                    0,
                ),
            ),
            ("IVF-PQ heap plain", cell(get("variant_ivfpq", "load_plain", "anon_added_mb"), 0, "variant_ivfpq")),
            ("mapped", cell(get("variant_ivfpq", "load_mmap", "anon_added_mb"), 0, "variant_ivfpq")),
            (
                "q/s plain/mapped",
                pair(
                    get("variant_ivfpq", "load_plain", "search", "per_s"),
                    get("variant_ivfpq", "load_mmap", "search", "per_s"),
                    0,
                ),
            ),
        ],
    )
    lines += [
        "## Extrapolation to 21M passages",
        "",
        f"Fitted on the sizes from {FIT_FROM:,} on: disk and memory as a straight line (bytes per passage shown),",
        "times and q/s as a power law. 384-d vectors; DPR's 768-d vectors double every vector-sized term.",
        "IVF-PQ keeps 1,024 lists at every size from 250k (bounded training time here): its build time and q/s",
        "curves are not those of a 21M index, which would use ~16k lists.",
        "",
        *table_header(["quantity", "at 21M", "fit"], "lrl"),
    ]
    for name, (label, _, unit, kind) in SERIES.items():
        value, how = extrapolate(results, name)
        if kind == "linear":
            per = per_passage_bytes(results, name)
            how = f"{per:,.0f} bytes/passage" if per is not None else how
            shown = f"{value / 1024:,.1f} GiB" if value is not None else "–"
        else:
            shown = f"{fmt(value)} {unit}" if value is not None else "–"
        lines.append(f"| {label} ({unit}) | {shown} | {how} |")
    lines.append("")
    lines += [
        "## Notes",
        "",
        "- The synthetic passages reuse the pool's words: the BM25 vocabulary stays at the pool's (about 1 MB), where",
        "  real Wikipedia at 21M has millions of terms (a Python dict in the heap). Postings per passage are realistic.",
        "- Without the FAISS delta, FAISS catch-up after opening was linear in N: the first add read the mapped index into",
        "  memory, then FAISS reallocated and copied all its vectors to append, once per process, and with autosave the first",
        "  search after a write rewrote and hashed the whole FAISS folder. With it, both touch only the delta; the fold of the",
        "  delta into the main index (past `dense_delta_fraction` of it, 5% by default) is the full rewrite, and is not measured here.",
        "- Checking a loaded FAISS index against the table reads the vector count that SQLite triggers keep in the",
        "  write transactions (the previous code counted with `SELECT COUNT(*) ... WHERE embedding IS NOT NULL`, which",
        "  read every row: 3.3 s at 2M, warm). A loaded BM25 index, whose files the checksums vouch for, is checked by",
        "  its shapes, not by re-reading every posting.",
        "- A memory-mapped FAISS index cannot take additions: IVF raises, Flat/HNSW abort the process on a FAISS",
        "  assertion (FAISS 1.15.1). Mapped IVF lists (`IO_FLAG_MMAP`) searched 2-10x slower than in memory here.",
        "- The HNSW32 / IVF-PQ peaks include generating the synthetic vectors and the exact top 100 for recall; the",
        "  memory of the index itself is its *heap plain* column above.",
        "",
    ]
    skipped = [
        f"{step} at {int(n):,}: {e[step]['skipped']}"
        for n, e in sorted(results["sizes"].items(), key=lambda x: int(x[0]))
        for step in e
        if isinstance(e[step], dict) and "skipped" in e[step]
    ]
    failed = [
        f"{step} at {int(n):,}: {e[step]['failed']}"
        for n, e in results["sizes"].items()
        for step in e
        if isinstance(e[step], dict) and "failed" in e[step]
    ]
    if skipped or failed:
        lines += ["## Not measured", "", *[f"- {line}" for line in skipped + failed], ""]
    return "\n".join(lines)


BEFORE_AFTER: list[tuple[str, Getter, int]] = [
    ("open + first BM25 + first dense search s", SERIES["open_s"][1], 2),
    ("checksum check ms", _milliseconds(SERIES["verify_s"][1]), 1),
    ("heap after opening MiB", get("serve", "memory_after_open", "anon_mb"), 0),
    ("RSS after opening MiB", get("serve", "memory_after_open", "rss_mb"), 0),
    ("serving peak MiB", get("serve", "vm_hwm_mb"), 0),
    ("BM25 q/s (store)", get("serve", "bm25_store", "per_s"), 0),
    ("Flat q/s (store)", get("serve", "dense_store", "per_s"), 1),
    ("hybrid q/s", get("serve", "hybrid_single", "per_s"), 1),
    ("add 1,000: write s", get("add", "write_s"), 3),
    ("add 1,000: FAISS catch-up s", get("add", "dense_catch_up_s"), 2),
    ("add 1,000: first dense search (autosave) s", get("add", "first_dense_search_s"), 2),
    ("write_documents into SQLite, passages/s", get("write", "per_s"), 0),
]


DELTA_ROWS: list[tuple[str, Getter, int]] = [
    ("first search after opening: dense s", get("add", "load_dense_s"), 3),
    ("write_documents s", get("add", "write_s"), 3),
    ("FAISS catch-up s", get("add", "dense_catch_up_s"), 3),
    ("first dense search (autosave saves FAISS) s", get("add", "first_dense_search_s"), 3),
    ("second dense search s", get("add", "second_dense_search_s"), 3),
    ("save() s (BM25 rewritten whole, FAISS already saved)", get("add", "save_s"), 2),
    ("2nd batch: write s", get("add", "second_write_s"), 3),
    ("2nd batch: FAISS catch-up s", get("add", "second_dense_catch_up_s"), 3),
    ("2nd batch: save() s (BM25 + FAISS)", get("add", "second_save_s"), 2),
    ("FAISS delta folder after the first save() MiB", get("add", "dense_delta_mb"), 2),
    ("main FAISS file rewritten by it (1 = yes)", lambda e: _flag(get("add", "main_faiss_rewritten")(e)), 0),
    ("heap after the first batch MiB", get("add", "memory_after_add", "anon_mb"), 0),
    ("peak RSS of the step MiB", get("add", "vm_hwm_mb"), 0),
    ("load average", get("add", "load_average"), 1),
]


def _flag(value: Any) -> float | None:
    return None if value is None else float(bool(value))


def delta_before_after(results: dict) -> list[str]:
    """The add step without the FAISS delta (``results["before_delta"]``) and with it, back to back."""
    before = results.get("before_delta", {})
    sizes = sorted((n for n in before if "add" in before[n] and "add" in results["sizes"].get(n, {})), key=int)
    if not sizes:
        return []
    lines = [
        "## Adding with the FAISS delta: before and after",
        "",
        "The add step at the same sizes with the store code before the FAISS delta (*before*) and with it (*after*),",
        "run back to back, each on a fresh copy of the same saved store (its index files hashed by one opening",
        "beforehand). Commands: `run --sizes N --steps add --redo add --code <checkout of the previous commit>`, then",
        "`run --sizes N --steps add --redo add --keep-before --before-key before_delta`.",
        "Each cell is before → after (ratio after/before).",
        "",
        *_sizes_header(sizes),
    ]
    for label, getter, digits in DELTA_ROWS:
        cells = []
        for n in sizes:
            a, b = getter(before[n]), getter(results["sizes"][n])
            ratio = f" ({b / a:.2g}x)" if a and b is not None and label != "load average" else ""
            cells.append(f"{fmt(a, digits)} → {fmt(b, digits)}{ratio}")
        lines.append(table_row([label, *cells]))
    return lines + [""]


def _sizes_header(sizes: list[str]) -> list[str]:
    return table_header(["quantity", *(f"{int(n):,}" for n in sizes)], "l" + "r" * len(sizes))


def _load_range(entries: dict, sizes: list[str]) -> str:
    """The range of the load averages recorded by the serve and add steps of ``sizes``."""
    loads = [
        entries[n][step]["load_average"]
        for n in sizes
        for step in ("serve", "add")
        if "load_average" in entries[n].get(step, {})
    ]
    return f"{min(loads):.1f}–{max(loads):.1f}" if loads else "?"


def before_after(results: dict) -> list[str]:
    """Previous store code (``results["before"]``) against the current one, at the sizes measured by both."""
    before = results.get("before", {})
    sizes = sorted((n for n in before if n in results["sizes"] and "serve" in results["sizes"][n]), key=int)
    if not sizes:
        return []
    lines = [
        "## Before and after: opening and adding with the previous store code",
        "",
        "*before*: the store as it was (every opening hashed every index file, counted the vectors with a scan of the",
        "table and read both indexes into the heap), measured earlier on the same machine with the same command;",
        "*after*: vector counter, checksums verified once per file, memory-mapped indexes (the tables above).",
        f"Each cell is before → after. Load averages differed between the runs ({_load_range(before, sizes)} before,",
        f"{_load_range(results['sizes'], sizes)} after: scale.json), so compare queries/s mapped against plain in the same",
        "run (the table under *Opening*), not here.",
        "",
        *_sizes_header(sizes),
    ]
    for label, getter, digits in BEFORE_AFTER:
        cells = [
            f"{fmt(getter(before[n]), digits)} → {fmt(getter(_without_delta(results, n, label)), digits)}"
            for n in sizes
        ]
        lines.append(table_row([label, *cells]))
    return lines + [
        "The *add* rows' after is the store before the FAISS delta (its section above), so they show this change alone.",
        "",
    ]


def _without_delta(results: dict, size: str, label: str) -> dict:
    """The results of ``size`` for a row of :func:`before_after`: for the add rows, those measured
    with the store code before the FAISS delta when kept (``before_delta``)."""
    entry = results["sizes"][size]
    kept = results.get("before_delta", {}).get(size, {})
    return {**entry, "add": kept["add"]} if label.startswith("add ") and "add" in kept else entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, default=DOCS / "scale.json")
    parser.add_argument("--out-dir", type=Path, default=DOCS)
    args = parser.parse_args()
    if not args.json.is_file():
        raise SystemExit(f"{args.json} not found: run `python -m benchmarks.scale.scale_benchmark run` first")
    results = json.loads(args.json.read_text(encoding="utf-8"))
    plot(results, args.out_dir)
    atomic_write_text(args.out_dir / "scale.md", report(results))
    print(f"wrote {args.out_dir / 'scale.md'} and {len(PLOTS)} plots")


if __name__ == "__main__":
    main()
