"""The memory of ``haystack serve`` under a mixed load: ``--clients`` clients searching without pause, one
client indexing records at up to ``--rate`` records per second and one reading source documents
(``GET /documents/{id}``) every ``--documents-pause`` seconds, for ``--minutes``; the server's resident
memory (``VmRSS``, with its anonymous and file-backed parts, ``/proc/PID/status``) and its store's passage
count sampled every ``--sample-seconds``. The store: examples/corpus.jsonl and ``--base-records`` records
(as in index_under_search.py). ``--mix`` runs only some of the clients, to tell what makes the memory grow.

    nohup env OMP_NUM_THREADS=1 python -m benchmarks.load.server_memory --minutes 10 &
    python -m benchmarks.load.server_memory --minutes 1 --out memory_check   # a short check
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import latency_ms, log
from benchmarks.load.base_store import CORPUS, run_report
from benchmarks.load.index_under_search import questions, write_pipelines
from benchmarks.load.memory_maps import CATEGORIES, anonymous_breakdown
from benchmarks.load.mixed_clients import (
    RECORD_WORDS,
    IndexPlan,
    Timings,
    corpus_rows,
    documents_client,
    index_client,
    make_records,
    passages,
    search_client,
)
from benchmarks.load.served_clients import server_process
from dpr_components.document_stores.bm25_index import CACHE_POSTINGS
from dpr_components.evaluation.tables import markdown_table
from dpr_components.evaluation.templates import fill_template, sibling_template
from dpr_components.serving.allocator import DEFAULT_RELEASE_SECONDS, HOLD_THRESHOLDS_ENV, RELEASE_SECONDS_ENV

MODULE = "benchmarks.load.server_memory"
TEMPLATE = sibling_template(__file__, "server_memory.md.template")
MIXES = ("all", "searches", "index", "documents")
THRESHOLDS = ("held", "dynamic")
STATUS_FIELDS = {
    "VmRSS": "rss_mb",
    "RssAnon": "anon_mb",
    "RssFile": "file_mb",
    "VmHWM": "peak_mb",
    "Threads": "threads",
}


def memory(pid: int) -> dict[str, float]:
    """The process's resident memory in MB (total, anonymous, file-backed, peak) and its thread count."""
    found: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in STATUS_FIELDS:
            number = float(value.split()[0])
            found[STATUS_FIELDS[name]] = number if name == "Threads" else round(number / 1024, 1)
    return found


def sample(url: str, pid: int, started: float, stop: threading.Event, every: float, out: list[dict[str, Any]]) -> None:
    """Every ``every`` seconds until ``stop``: the memory and the passage count, with the time since ``started``."""
    while True:
        out.append({"seconds": round(time.monotonic() - started, 1), **memory(pid), "passages": passages(url)["index"]})
        if stop.wait(every):
            out.append(
                {"seconds": round(time.monotonic() - started, 1), **memory(pid), "passages": passages(url)["index"]}
            )
            return


def clients(
    url: str, args: argparse.Namespace, stop: threading.Event, prefix: str, mix: set[str]
) -> tuple[list[threading.Thread], dict[str, Timings]]:
    """The client threads of ``args.mix`` (not started; the records' ids ``{prefix}-{n}``) and what each kind
    will record."""
    kinds = {"searches": Timings(), "index": Timings(), "documents": Timings()}
    wanted = mix
    threads = []
    if "searches" in wanted:
        asked = questions()
        threads += [
            threading.Thread(target=search_client, args=(url, "search", asked, 7 * n, stop, kinds["searches"]))
            for n in range(args.clients)
        ]
    if "index" in wanted:
        plan = IndexPlan(args.rate, args.batch, args.words, prefix=prefix)
        threads.append(
            threading.Thread(target=index_client, args=(url, corpus_rows(CORPUS), plan, stop, kinds["index"]))
        )
    if "documents" in wanted:
        # the corpus's documents, and those the indexing client wrote so far (its list grows as it writes)
        pools = ([str(row["id"]) for row in corpus_rows(CORPUS)], kinds["index"].ids)
        reader = (url, "search", pools, stop, kinds["documents"], args.documents_pause)
        threads.append(threading.Thread(target=documents_client, args=reader))
    return threads, kinds


def _load(url: str, pid: int, args: argparse.Namespace, seconds: float, prefix: str, mix: set[str]) -> dict[str, Any]:
    """The clients of ``mix`` for ``seconds`` against the server ``pid``, its memory sampled; the samples and
    each kind of client's rate."""
    started, stop, samples = time.monotonic(), threading.Event(), []
    sampler = threading.Thread(target=sample, args=(url, pid, started, stop, args.sample_seconds, samples))
    sampler.start()
    threads, kinds = clients(url, args, stop, prefix, mix)
    for thread in threads:
        thread.start()
    stop.wait(seconds)
    stop.set()
    for thread in [*threads, sampler]:
        thread.join()
    rates = {}
    for kind, timings in kinds.items():
        if timings.seconds or timings.errors:
            rates[kind] = {"per_second": len(timings.seconds) / seconds, "errors": len(timings.errors)}
            rates[kind].update(latency_ms(timings.seconds) if timings.seconds else {})
    rates.get("index", {}).update(records=len(kinds["index"].ids), passages_written=kinds["index"].written)
    return {"samples": samples, "rates": rates, "maps": anonymous_breakdown(pid)}


def measure(work: Path, base: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The server under the load for ``args.minutes``, sampled; then a fresh server on the store as the load
    left it, its write path warmed by one index request, under the reading clients for ``args.fresh_seconds``:
    what the same passages take without the long run behind them."""
    pipelines = work / "pipelines"
    write_pipelines(pipelines, base, ["search", "index"])
    mix = set(MIXES[1:]) if args.mix == "all" else {args.mix}
    with server_process(pipelines, work, args.query_threads, label="memory") as (url, process):
        idle = memory(process.pid)
        measured = _load(url, process.pid, args, 60 * args.minutes, "memory", mix)
    log(f"a fresh server on the store the load left, {args.fresh_seconds:g} s of searches and document reads")
    with server_process(pipelines, work, args.query_threads, label="fresh") as (url, process):
        records = make_records(corpus_rows(CORPUS), "fresh", 0, args.batch, args.words)
        httpx.post(f"{url}/index/run", json={"records": records}, timeout=600).raise_for_status()
        fresh = _load(url, process.pid, args, args.fresh_seconds, "fresh", mix - {"index"} or {"searches"})
    return {"idle": idle, **measured, "fresh": fresh}


def _memory_rows(samples: list[dict[str, Any]], every: float) -> list[list[object]]:
    """One row a minute (and the first and last samples)."""
    shown = [s for n, s in enumerate(samples) if n in (0, len(samples) - 1) or int(s["seconds"]) % 60 < every]
    return [
        [
            f"{s['seconds'] / 60:.1f}",
            f"{s['rss_mb']:.0f}",
            f"{s['anon_mb']:.0f}",
            f"{s['file_mb']:.0f}",
            int(s["threads"]),
            f"{s['passages']:,}",
        ]
        for s in shown
    ]


def growth(summary: dict[str, Any]) -> dict[str, float]:
    """The run's memory from ``warm`` (after its first minute) to its ``end``, per 1,000 passages written, and
    against a ``fresh`` server on the same passages: ``kept`` is what the long run holds beyond it."""
    samples, fresh = summary["samples"], summary["fresh"]["samples"]
    warm = next((s for s in samples if s["seconds"] >= 60), samples[-1])
    end, fresh_end = samples[-1], fresh[-1]
    added = (end["passages"] or 0) - (warm["passages"] or 0)
    return {
        "warm_mb": warm["rss_mb"],
        "warm_passages": warm["passages"] or 0,
        "end_mb": end["rss_mb"],
        "end_passages": end["passages"] or 0,
        "grown_mb": end["rss_mb"] - warm["rss_mb"],
        "fresh_mb": fresh_end["rss_mb"],
        "fresh_passages": fresh_end["passages"] or 0,
        "per_thousand_mb": 1000 * (end["rss_mb"] - warm["rss_mb"]) / added if added else 0.0,
        "kept_mb": end["rss_mb"] - fresh_end["rss_mb"],
    }


def what_grows(split: dict[str, float]) -> str:
    """The reading of the split, from its numbers: growth the fresh server has too is the store's data."""
    kept, grown = split["kept_mb"], split["grown_mb"]
    if grown <= 0:
        return "The memory did not grow after the first minute."
    share = max(0.0, kept) / grown
    if share <= 0.25:
        return (
            f"The long run holds {kept:+.0f} MB against the fresh server ({100 * share:.0f}% of its growth after the "
            "first minute): what grows is the store itself, the passages written, in memory while served (the "
            "FAISS vectors, the BM25 postings and vocabulary, the rows' ids), not a cache or a leak of the serving."
        )
    return (
        f"The long run holds {kept:+.0f} MB more than the fresh server ({100 * share:.0f}% of its growth after the "
        "first minute): beyond the passages written, the serving itself keeps memory."
    )


def maps_table(summary: dict[str, Any]) -> str:
    """The anonymous memory of the long run's server and of the fresh one at their ends, by where it is
    (``memory_maps.py``), and the difference ("" for a run made before this was read)."""
    long_run, fresh = summary.get("maps"), summary["fresh"].get("maps")
    if not long_run or not fresh:
        return ""
    rows = [
        [name, f"{long_run[name]:.0f}", f"{fresh[name]:.0f}", f"{long_run[name] - fresh[name]:+.0f}"]
        for name in CATEGORIES
    ]
    heaps = [long_run["thread heap count"], fresh["thread heap count"]]
    rows.append(["thread heaps (count)", *(str(int(count)) for count in heaps), f"{heaps[0] - heaps[1]:+.0f}"])
    table = markdown_table(
        ["anonymous memory (`/proc/PID/smaps`)", "long run MB", "fresh MB", "difference"], rows, "lrrr"
    )
    return (
        "Where the anonymous memory of each server was at its end: glibc's main heap, its per-thread heaps "
        "(memory freed inside them and not handed back stays resident there) and the other anonymous mappings "
        "(blocks above the mmap threshold: the vectors, tensors and score arrays; thread stacks):\n\n"
        + "\n".join(table)
        + "\n"
        + _largest_lines(long_run, fresh)
    )


def _largest_lines(long_run: dict[str, Any], fresh: dict[str, Any]) -> str:
    """The largest mappings of each server by resident size ("" for a run made before they were read)."""
    if "largest" not in long_run or "largest" not in fresh:
        return ""

    def listed(found: dict[str, Any]) -> str:
        return "; ".join(f"{what} {resident:.0f} of {size:.0f}" for resident, size, what in found["largest"])

    return (
        "\nThe largest mappings of each (resident MB of mapped MB; a file's name for a file-backed one):\n\n"
        f"- long run: {listed(long_run)};\n- fresh: {listed(fresh)}.\n"
    )


def _rate_table(rates: dict[str, Any]) -> list[str]:
    rows = [
        [kind, f"{c['per_second']:.1f}", f"{c.get('p50_ms', 0):.0f}", f"{c.get('p95_ms', 0):.0f}", c["errors"]]
        for kind, c in rates.items()
    ]
    return markdown_table(["client", "requests/s", "p50 ms", "p95 ms", "errors"], rows, align="lrrrr")


def render(summary: dict[str, Any], command: str) -> str:
    """The markdown page: memory over time, and the growth against the passages written."""
    columns = ["minute", "RSS MB", "anonymous MB", "file-backed MB", "threads", "passages"]
    split = growth(summary)
    values = {
        **summary,
        "table": "\n".join(
            markdown_table(columns, _memory_rows(summary["samples"], summary["sample_seconds"]), "rrrrrr")
        ),
        "client_table": "\n".join(_rate_table(summary["rates"])),
        "idle_mb": f"{summary['idle']['rss_mb']:.0f}",
        "peak_mb": f"{max(s['rss_mb'] for s in summary['samples']):.0f}",
        **{
            key: f"{value:,.0f}" if not key.endswith("per_thousand_mb") else f"{value:.1f}"
            for key, value in split.items()
        },
        "what_grows": what_grows(split),
        "maps": maps_table(summary),
        "cache_postings": f"{CACHE_POSTINGS:,}",
        "command": command,
    }
    values["load_average"] = " → ".join(str(x) for x in summary["load_average"])
    every = summary.get("release_seconds", 0)
    values["release"] = f"every {every} s" if every else "never (0)"
    held = summary.get("thresholds", "dynamic") == "held"  # runs before the setting had glibc's own
    values["thresholds"] = (
        "held at 128 KiB (`DPR_HOLD_MALLOC_THRESHOLDS=1`, the default)"
        if held
        else "glibc's dynamic ones (`DPR_HOLD_MALLOC_THRESHOLDS=0`)"
    )
    return fill_template(TEMPLATE, values)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="length of the load (default: 10)")
    parser.add_argument("--mix", choices=MIXES, default="all", help="which clients run (default: all)")
    parser.add_argument("--clients", type=int, default=8, help="searching clients (default: 8)")
    parser.add_argument("--rate", type=float, default=200.0, help="records per second asked (default: 200)")
    parser.add_argument("--batch", type=int, default=10, help="records per index request (default: 10)")
    parser.add_argument("--words", type=int, default=RECORD_WORDS, help=f"words per record (default: {RECORD_WORDS})")
    parser.add_argument("--documents-pause", type=float, default=0.1, help="seconds between documents (default: 0.1)")
    parser.add_argument(
        "--base-records", type=int, default=4000, help="records in the store at the start (default: 4000)"
    )
    parser.add_argument(
        "--fresh-seconds", type=float, default=60.0, help="load on the fresh server at the end (default: 60)"
    )
    parser.add_argument("--sample-seconds", type=float, default=10.0, help="seconds between samples (default: 10)")
    parser.add_argument("--query-threads", type=int, default=1, help="the server's --query-threads (default: 1)")
    parser.add_argument(
        "--release-seconds",
        type=int,
        default=DEFAULT_RELEASE_SECONDS,
        help=f"the servers' {RELEASE_SECONDS_ENV}: seconds between releases of freed memory, 0 never "
        f"(default: {DEFAULT_RELEASE_SECONDS}, the server's own)",
    )
    parser.add_argument(
        "--thresholds",
        choices=THRESHOLDS,
        default="held",
        help=f"glibc's malloc thresholds in the servers ({HOLD_THRESHOLDS_ENV}): held at 128 KiB, the server's "
        "own (default), or glibc's dynamic ones",
    )
    parser.add_argument("--out", default="docs/benchmarks/load/server_memory", help="report path without suffix")
    parser.add_argument("--from-json", action="store_true", help="re-render the report from its JSON, no measuring")
    return parser


def main() -> None:
    args = _parser().parse_args()
    keys = ["minutes", "mix", "clients", "rate", "batch", "words", "documents_pause", "base_records"]
    keys += ["sample_seconds", "fresh_seconds", "query_threads", "release_seconds", "thresholds"]
    settings = {key: getattr(args, key) for key in keys}

    def measured(work: Path, base: Path) -> dict[str, Any]:
        os.environ[RELEASE_SECONDS_ENV] = str(args.release_seconds)  # the servers started here inherit them
        os.environ[HOLD_THRESHOLDS_ENV] = str(int(args.thresholds == "held"))
        log(f"mixed load ({args.mix}) for {args.minutes:g} min")
        return measure(work, base, args)

    run_report(MODULE, args, settings, measured, render)


if __name__ == "__main__":
    main()
