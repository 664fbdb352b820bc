"""Write docs/benchmarks/scale/scale.md and its plots from docs/benchmarks/scale/scale.json.

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
from dpr_components.evaluation.templates import fill_template, sibling_template
from dpr_components.utils.atomic_files import atomic_write_text

DOCS = REPO_ROOT / "docs" / "benchmarks" / "scale"
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


Column = tuple[str, Callable[[dict], str]]


def _variant_memory(label: str, variant: str) -> list[Column]:
    """The heap of an extra dense index loaded plain and memory-mapped, and its queries/s either way."""
    return [
        (f"{label} heap plain", cell(get(variant, "load_plain", "anon_added_mb"), 0, variant)),
        ("mapped", cell(get(variant, "load_mmap", "anon_added_mb"), 0, variant)),
        (
            "q/s plain/mapped",
            pair(get(variant, "load_plain", "search", "per_s"), get(variant, "load_mmap", "search", "per_s"), 0),
        ),
    ]


# The columns of each per-size table of the report (after the size column): (title, cell maker).
TABLES: dict[str, list[Column]] = {
    "build": [
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
    "disk": [
        ("SQLite", cell(get("write", "sqlite_mb"), 0)),
        ("BM25", cell(get("build_bm25", "disk_mb"), 0)),
        ("Flat", cell(get("build_flat", "disk_mb"), 0)),
        ("store total", cell(total_disk, 0)),
        ("HNSW32", cell(get("variant_hnsw", "disk_mb"), 0, "variant_hnsw")),
        ("IVF-PQ", cell(get("variant_ivfpq", "disk_mb"), 0, "variant_ivfpq")),
    ],
    "opening": [
        ("first BM25 search s", cell(get("serve", "first_bm25_s"), 2)),
        ("first dense search s", cell(get("serve", "first_dense_s"), 2)),
        ("checksum check ms", cell(_milliseconds(SERIES["verify_s"][1]), 1)),
        ("full re-hash s", cell(lambda e: _sum(e, ("serve", "rehash_bm25_s"), ("serve", "rehash_dense_s")), 2)),
        ("heap after opening MiB", cell(get("serve", "memory_after_open", "anon_mb"), 0)),
        ("RSS after opening MiB", cell(get("serve", "memory_after_open", "rss_mb"), 0)),
        ("serving peak MiB", cell(get("serve", "vm_hwm_mb"), 0)),
    ],
    "mapped_plain": [
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
            pair(get("serve", "memory_after_open", "anon_mb"), get("serve_plain", "memory_after_open", "anon_mb"), 0),
        ),
        ("serving peak MiB", pair(get("serve", "vm_hwm_mb"), get("serve_plain", "vm_hwm_mb"), 0)),
        ("BM25 q/s", pair(get("serve", "bm25_store", "per_s"), get("serve_plain", "bm25_store", "per_s"), 0)),
        ("Flat q/s", pair(get("serve", "dense_store", "per_s"), get("serve_plain", "dense_store", "per_s"), 1)),
        ("hybrid q/s", pair(get("serve", "hybrid_single", "per_s"), get("serve_plain", "hybrid_single", "per_s"), 1)),
    ],
    "qps": [
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
    "add": [
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
    "mmap": [
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
        *_variant_memory("HNSW", "variant_hnsw"),
        *_variant_memory("IVF-PQ", "variant_ivfpq"),
    ],
}
TEMPLATE = sibling_template(__file__, "scale_report.md.template")


def report(results: dict) -> str:
    """docs/benchmarks/scale/scale.md: the template filled with :func:`report_data`."""
    return fill_template(TEMPLATE, report_data(results))


def report_data(results: dict) -> dict[str, str]:
    """The values of the report's placeholders: settings, the per-size tables and the computed sections."""
    s = results.get("settings", {})
    by_size = sorted(results["sizes"].items(), key=lambda x: int(x[0]))
    return {
        "sizes": ",".join(sorted(results["sizes"], key=int)),
        "budget": f"{s.get('query_budget_s', 10):g}",
        "machine": results.get("machine", "?"),
        "top_k": s.get("top_k", 100),
        "budget_s": s.get("query_budget_s", "?"),
        "hybrid_candidates": s.get("hybrid_candidates", 2000),
        "added": f"{s.get('added', 1000):,}",
        "ivfpq_factories": ", ".join(
            f"{int(n):,}: {e['variant_ivfpq']['factory']}"
            for n, e in by_size
            if "factory" in e.get("variant_ivfpq", {})
        ),
        **{f"{name}_table": "\n".join(table(results, [], columns)[:-1]) for name, columns in TABLES.items()},
        "delta_before_after": _section(delta_before_after(results)),
        "before_after": _section(before_after(results)),
        "fit_from": f"{FIT_FROM:,}",
        "extrapolation_rows": "\n".join(extrapolation_rows(results)),
        "not_measured": _not_measured(results, by_size),
    }


def _section(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


def extrapolation_rows(results: dict) -> list[str]:
    """One table row per series: its value at 21M and how it was fitted."""
    rows = []
    for name, (label, _, unit, kind) in SERIES.items():
        value, how = extrapolate(results, name)
        if kind == "linear":
            per = per_passage_bytes(results, name)
            how = f"{per:,.0f} bytes/passage" if per is not None else how
            shown = f"{value / 1024:,.1f} GiB" if value is not None else "–"
        else:
            shown = f"{fmt(value)} {unit}" if value is not None else "–"
        rows.append(f"| {label} ({unit}) | {shown} | {how} |")
    return rows


def _not_measured(results: dict, by_size: list[tuple[str, dict]]) -> str:
    """The section listing the skipped and failed steps, or nothing."""
    skipped = [
        f"{step} at {int(n):,}: {e[step]['skipped']}"
        for n, e in by_size
        for step in e
        if isinstance(e[step], dict) and "skipped" in e[step]
    ]
    failed = [
        f"{step} at {int(n):,}: {e[step]['failed']}"
        for n, e in results["sizes"].items()
        for step in e
        if isinstance(e[step], dict) and "failed" in e[step]
    ]
    if not skipped and not failed:
        return ""
    return "\n" + "\n".join(["## Not measured", "", *[f"- {line}" for line in skipped + failed], ""])


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
    return [*lines, ""]


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
    return [
        *lines,
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
