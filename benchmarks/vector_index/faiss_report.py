"""Markdown rendering of the FAISS benchmark's JSON report: the values of ``faiss_report.md.template``
(its tables and summary sentences) computed from the report."""

from __future__ import annotations

from dpr_components.evaluation.tables import table_header
from dpr_components.evaluation.templates import fill_template, sibling_template

TEMPLATE = sibling_template(__file__, "faiss_report.md.template")
REAL_HEADER = [
    "index",
    "efSearch",
    "recall@100",
    "single q/s",
    "Flat single q/s",
    "single speed-up (min-max)",
    "batch speed-up",
    "build s",
    "MiB",
]
SCALING_HEADER = ["N", "synthetic share", "index", "build s", "MiB", "search setting", "recall@100", "q/s"]


def _best(rows: list[dict], floor_key: str, floor: float, key: str) -> dict | None:
    """The row with the highest ``key`` among those whose ``floor_key`` reaches ``floor`` (None when none does)."""
    passing = [r for r in rows if r[floor_key] >= floor]
    return max(passing, key=lambda r: r[key]) if passing else None


def summarize_real(real: dict) -> list[str]:
    """Sentences on the best trade-offs, computed from the rows."""
    goal_recall, goal_speed = real["target"]["recall_at_100"], real["target"]["single_speedup"]
    rows = real["rows"]
    lines = []
    best = _best(rows, "recall_at_100", goal_recall, "single_speedup")
    if best is not None:
        lines.append(
            f"- Fastest configuration with recall@100 >= {goal_recall}: {best['config']} at efSearch={best['ef_search']} "
            f"(recall {best['recall_at_100']:.4f}, {best['single_speedup']:.2f}x Flat single-query, "
            f"{best['batch_speedup']:.2f}x Flat batched)."
        )
    best = _best(rows, "single_speedup", goal_speed, "recall_at_100")
    if best is not None:
        lines.append(
            f"- Most accurate configuration at >= {goal_speed:g}x Flat: {best['config']} at efSearch={best['ef_search']} "
            f"(recall {best['recall_at_100']:.4f}, {best['single_speedup']:.2f}x)."
        )
    default = [r for r in rows if r["config"] == "HNSW32 efC=40" and r["recall_at_100"] >= goal_recall]
    if default:
        first = min(default, key=lambda r: r["ef_search"])
        lines.append(
            f"- The store's default build (factory `HNSW32`, efConstruction 40) first reaches recall {goal_recall} at "
            f"efSearch={first['ef_search']}: {first['recall_at_100']:.4f} at {first['single_speedup']:.2f}x Flat."
        )
    if real["target"]["met_by"]:
        low_efc = [m for m in real["target"]["met_by"] if "efC=40" in m["config"]]
        if not low_efc:
            lines.append(
                "- Every configuration meeting the target was built with efConstruction above 40, the FAISS default: "
                "set the store's `ef_construction` (and `ef_search`) to build and search it that way."
            )
    lines.append(
        "- Batched search changes the picture: Flat answers a batch with one matrix product, so HNSW's advantage "
        "shrinks (see the batch speed-up column); the store searches one question per call."
    )
    return lines


def summarize_scaling(scaling: dict) -> list[str]:
    """Sentences comparing the largest N measured with the smallest."""
    first, last = scaling["results"][0], scaling["results"][-1]
    lines = [
        f"- Flat single-thread q/s falls from {first['flat']['qps']:.1f} at N={first['n']:,} to "
        f"{last['flat']['qps']:.1f} at N={last['n']:,}."
    ]
    for row in (first, last):
        h = row["hnsw"]
        if "sweep" in h:
            parts = ", ".join(f"efSearch={p['ef_search']}: {p['recall_at_100']:.4f}" for p in h["sweep"])
            lines.append(f"- HNSW recall@100 at N={row['n']:,}: {parts}.")
        for v in row["ivf"]:
            p = next(p for p in v["sweep"] if p["nprobe"] == v["chosen_nprobe"])
            lines.append(
                f"- {v['config']} at N={row['n']:,}: recall@100 {p['recall_at_100']:.4f} at nprobe={p['nprobe']}, "
                f"{p['qps']:.0f} q/s, {mib(v['bytes'])} MiB vs Flat's {mib(row['flat']['bytes'])} MiB."
            )
    lines.append(
        "- IVF-PQ's recall is capped by the product quantizer (no re-ranking with exact vectors), whatever nprobe; "
        "synthetic vectors are less clustered than real ones, so numbers beyond the real N are indicative only."
    )
    return lines


def mib(n_bytes: int) -> str:
    """Bytes in MiB, one decimal."""
    return f"{n_bytes / 2**20:.1f}"


def render_markdown(report: dict, command: str, png_name: str) -> str:
    """The whole report, from the JSON ``report`` (both parts measured)."""
    return fill_template(TEMPLATE, report_values(report, command, png_name))


def report_values(report: dict, command: str, png_name: str) -> dict[str, object]:
    """The template's placeholders."""
    real, scaling, env = report["real"], report["scaling"], report["environment"]
    return {
        "command": command,
        "date": env["date"],
        "total_minutes": f"{env['total_minutes']:.0f}",
        "cpu": env["cpu"],
        "build_threads": env["build_threads"],
        "rounds": env["rounds"],
        "queries": real["queries"],
        "n": f"{real['n']:,}",
        "flat_mib": mib(real["flat"]["bytes"]),
        "real_table": "\n".join(real_table(real)),
        "target": target_sentence(real["target"]),
        "real_summary": "\n".join(summarize_real(real)),
        "real_n": f"{scaling['real_n']:,}",
        "timing_queries": scaling["timing_queries"],
        "png_name": png_name,
        "scaling_table": "\n".join(scaling_table(scaling)),
        "scaling_summary": "\n".join(summarize_scaling(scaling)),
    }


def real_table(real: dict) -> list[str]:
    """Part 1's table: one row per configuration and efSearch."""
    lines = table_header(REAL_HEADER, "lrrrrrrrr")
    for r in real["rows"]:
        lines.append(
            f"| {r['config']} | {r['ef_search']} | {r['recall_at_100']:.4f} | {r['single_qps']:.0f} | "
            f"{r['single_flat_qps']:.0f} | {r['single_speedup']:.2f}x ({r['single_speedup_min']:.2f}-"
            f"{r['single_speedup_max']:.2f}) | {r['batch_speedup']:.2f}x | {r['build_s']:.1f} | {mib(r['bytes'])} |"
        )
    return lines


def _configs(met: list[dict]) -> str:
    return ", ".join(f"{m['config']} at efSearch={m['ef_search']}" for m in met)


def target_sentence(target: dict) -> str:
    """The target, which configurations met it, and which met it in every timing round."""
    met, every_round = target["met_by"], target["met_in_every_round_by"]
    sentence = (
        f"**Target: recall@100 >= {target['recall_at_100']} at >= {target['single_speedup']:g}x Flat's single-thread "
        "queries/s.** "
    )
    sentence += f"Met by: {_configs(met)}." if met else "Not met by any configuration measured."
    if every_round:
        sentence += f" Met in every timing round by: {_configs(every_round)}."
    elif met:
        sentence += " No configuration met it in every timing round: the margin is within the machine's noise."
    return sentence


def scaling_table(scaling: dict) -> list[str]:
    """Part 2's table: Flat, HNSW (per efSearch) and each IVF (per nprobe) at every N."""
    lines = table_header(SCALING_HEADER, "rrlrrlrr")
    for row in scaling["results"]:
        lines += _scaling_rows(row, f"{row['n']:,}", f"{row['synthetic_share_of_flat_top100']:.1%}")
    return lines


def _scaling_rows(row: dict, n: str, share: str) -> list[str]:
    f, h = row["flat"], row["hnsw"]
    lines = [f"| {n} | {share} | Flat | {f['build_s']:.2f} | {mib(f['bytes'])} | exact | 1.0000 | {f['qps']:.1f} |"]
    if "sweep" in h:
        lines += [
            f"| {n} | {share} | {h['config']} | {h['build_s']:.1f} | {mib(h['bytes'])} | efSearch={p['ef_search']} "
            f"| {p['recall_at_100']:.4f} | {p['qps']:.0f} |"
            for p in h["sweep"]
        ]
    else:
        lines.append(f"| {n} | {share} | HNSW | - | - | skipped: {h['skipped']} | - | - |")
    for v in row["ivf"]:
        for p in v["sweep"]:
            mark = " (chosen)" if p["nprobe"] == v["chosen_nprobe"] else ""
            lines.append(
                f"| {n} | {share} | {v['config']} | {v['build_s']:.1f} | {mib(v['bytes'])} | nprobe={p['nprobe']}{mark} "
                f"| {p['recall_at_100']:.4f} | {p['qps']:.0f} |"
            )
    return lines
