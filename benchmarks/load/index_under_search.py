"""The index route beside searches: ``haystack serve`` on the bundled models, ``--clients`` clients
searching without pause while one client indexes records (``POST /index/run``, ``--batch`` records of
``--words`` words a request) at up to ``--rate`` records per second. Two servers run the same pipelines on
copies of one store, one with the writes in the searches' queue (``--write-queue shared``, the former
behaviour), one with the writes in a queue of their own (``own``, the default); the mixed load alternates
between them round by round (ABBA order, so a change in the machine's other load falls on both), then each
runs one phase alone for the ceilings (the searches alone, the indexing alone). Every record acknowledged
is then looked up (``GET /documents/{id}``) and the passage count checked.

The store: examples/corpus.jsonl and ``--base-records`` short records, so that what a round writes changes
the cost of a search little (the hybrid's candidate lists are 2,000 long).

    python -m benchmarks.load.index_under_search
    python -m benchmarks.load.index_under_search --seconds 10 --rounds 1 --base-records 500   # a short check
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import REPO_ROOT, latency_ms, log
from benchmarks.load.base_store import CORPUS, run_report
from benchmarks.load.mixed_clients import (
    RECORD_WORDS,
    IndexPlan,
    Timings,
    corpus_rows,
    index_client,
    missing_documents,
    passages,
    search_client,
)
from benchmarks.load.served_clients import server_process
from dpr_components.evaluation.tables import markdown_table
from dpr_components.evaluation.templates import fill_template, sibling_template
from dpr_components.store_access.serialization import replace_store_paths

QUESTIONS = REPO_ROOT / "examples" / "questions.jsonl"
MODULE = "benchmarks.load.index_under_search"
TEMPLATE = sibling_template(__file__, "index_under_search.md.template")
QUEUES = ("shared", "own")
ALONE = {"shared": "searches alone", "own": "indexing alone"}


def questions() -> list[str]:
    """The questions of examples/questions.jsonl."""
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()]


def write_pipelines(folder: Path, store: Path, names: list[str]) -> None:
    """Copies of ``pipelines/{name}.yml`` on ``store``, the index pipeline without its embedding cache or
    progress bar."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        spec = yaml.safe_load((REPO_ROOT / "pipelines" / f"{name}.yml").read_text(encoding="utf-8"))
        replace_store_paths(spec, str(store.resolve()))
        embedder = spec["components"].get("embedder", {}).get("init_parameters")
        if embedder is not None:
            embedder.update(cache_dir=None, progress_bar=False)
        (folder / f"{name}.yml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")


def run_phase(
    url: str, args: argparse.Namespace, asked: list[str], searching: bool, plan: IndexPlan | None
) -> dict[str, Any]:
    """``args.seconds`` of the searching clients and/or the indexing client; what each did."""
    stop = threading.Event()
    searches = [Timings() for _ in range(args.clients if searching else 0)]
    indexed = Timings()
    workers = [
        threading.Thread(target=search_client, args=(url, args.pipeline, asked, 7 * n, stop, out))
        for n, out in enumerate(searches)
    ]
    if plan is not None:
        workers.append(threading.Thread(target=index_client, args=(url, corpus_rows(CORPUS), plan, stop, indexed)))
    for worker in workers:
        worker.start()
    stop.wait(args.seconds)
    stop.set()
    for worker in workers:
        worker.join()
    return {"searches": searches, "indexed": indexed if plan is not None else None}


def summarise(runs: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    """Rates and latencies of the phases ``runs`` (the rounds of one condition), taken together."""
    seconds = args.seconds * len(runs)
    searched = [s for run in runs for t in run["searches"] for s in t.seconds]
    indexed = [run["indexed"] for run in runs if run["indexed"] is not None]
    errors = [e for run in runs for t in run["searches"] for e in t.errors] + [e for t in indexed for e in t.errors]
    out: dict[str, Any] = {"seconds": seconds, "errors": len(errors), "first_errors": errors[:5]}
    if searched:
        out["searches"] = {"per_second": len(searched) / seconds, "count": len(searched), **latency_ms(searched)}
    if indexed:
        times = [s for t in indexed for s in t.seconds]
        out["index"] = {
            "asked_records_per_second": args.rate,
            "records_per_second": sum(len(t.ids) for t in indexed) / seconds,
            "records": sum(len(t.ids) for t in indexed),
            "passages_written": sum(t.written for t in indexed),
            **(latency_ms(times) if times else {}),
        }
    return out


def _serve(stack: contextlib.ExitStack, work: Path, base: Path, queue: str, args: argparse.Namespace) -> str:
    """A copy of the base store served with ``--write-queue queue``; its URL."""
    store = work / f"store-{queue}"
    shutil.copytree(base, store)
    pipelines = work / f"pipelines-{queue}"
    write_pipelines(pipelines, store, [args.pipeline, "index"])
    options = ["--write-queue", queue]
    url, _ = stack.enter_context(server_process(pipelines, work, args.query_threads, options, label=queue))
    return url


def measure(work: Path, base: Path, args: argparse.Namespace, asked: list[str]) -> dict[str, Any]:
    """Both servers: the mixed rounds in ABBA order, then each one's phase alone, then every write checked."""
    with contextlib.ExitStack() as stack:
        urls = {queue: _serve(stack, work, base, queue, args) for queue in QUEUES}
        before = {queue: passages(url)["index"] for queue, url in urls.items()}
        runs: dict[str, dict[str, list[dict[str, Any]]]] = {queue: {"mixed": []} for queue in QUEUES}
        order = [q for n in range(args.rounds) for q in (QUEUES if n % 2 == 0 else QUEUES[::-1])]
        for n, queue in enumerate(order):
            log(f"round {n + 1}/{len(order)}: --write-queue {queue}, {args.clients} searching clients and one indexing")
            plan = IndexPlan(args.rate, args.batch, args.words, prefix=f"mixed{n}")
            runs[queue]["mixed"].append(run_phase(urls[queue], args, asked, True, plan))
        for queue, alone in ALONE.items():
            log(f"--write-queue {queue}: {alone}")
            plan = IndexPlan(args.rate, args.batch, args.words, prefix="alone") if alone == "indexing alone" else None
            runs[queue][alone] = [run_phase(urls[queue], args, asked, alone == "searches alone", plan)]
        return {queue: _checked(urls[queue], before[queue], runs[queue], args) for queue in QUEUES}


def _checked(
    url: str, before: int | None, runs: dict[str, list[dict[str, Any]]], args: argparse.Namespace
) -> dict[str, Any]:
    """One server's phases summarised, and whether every acknowledged record is served and counted."""
    indexed = [run["indexed"] for phase in runs.values() for run in phase if run["indexed"] is not None]
    ids = [i for t in indexed for i in t.ids]
    written = sum(t.written for t in indexed)
    after = passages(url)["index"]
    missing = missing_documents(url, args.pipeline, ids)
    check = {"records": len(ids), "documents_missing": len(missing), "passages_before": before}
    check.update(passages_after=after, passages_acknowledged=written)
    check["all_kept"] = not missing and None not in (before, after) and after - before == written  # type: ignore[operator]
    return {"phases": {phase: summarise(found, args) for phase, found in runs.items()}, "check": check}


def render(summary: dict[str, Any], command: str) -> str:
    """The markdown page."""
    rows = [
        _row(queue, phase, found) for queue, s in summary["servers"].items() for phase, found in s["phases"].items()
    ]
    columns = ["write queue", "phase", "searches/s", "search p50", "search p95", "records asked/s", "records/s"]
    columns += ["index request p50", "index request p95", "errors"]
    table = markdown_table(columns, rows, align="llrrrrrrrr")
    checks = []
    for queue, s in summary["servers"].items():
        c = s["check"]
        passages_change = f"{c['passages_before']} → {c['passages_after']}"
        kept = "yes" if c["all_kept"] else "**no**"
        checks.append(
            [f"`{queue}`", c["records"], c["documents_missing"], passages_change, c["passages_acknowledged"], kept]
        )
    check_columns = ["write queue", "records acknowledged", "not served by /documents", "passages"]
    check_columns += ["passages acknowledged", "every write kept"]
    check_table = markdown_table(check_columns, checks, align="lrrrrl")
    values = {**summary, "table": "\n".join(table), "check_table": "\n".join(check_table), "command": command}
    values["load_average"] = " → ".join(str(x) for x in summary["load_average"])
    values.update(_headline(summary))
    return fill_template(TEMPLATE, values)


def _ms(found: dict[str, Any] | None, key: str) -> str:
    return f"{found[key]:.0f}" if found and key in found else "–"


def _row(queue: str, phase: str, found: dict[str, Any]) -> list[object]:
    searches, index = found.get("searches"), found.get("index")
    return [
        f"`{queue}`",
        phase,
        f"{searches['per_second']:.1f}" if searches else "–",
        _ms(searches, "p50_ms"),
        _ms(searches, "p95_ms"),
        f"{index['asked_records_per_second']:g}" if index else "–",
        f"{index['records_per_second']:.1f}" if index else "–",
        _ms(index, "p50_ms"),
        _ms(index, "p95_ms"),
        found["errors"],
    ]


def _headline(summary: dict[str, Any]) -> dict[str, str]:
    """Records/s under the search load, shared against own, and what the searches keep."""
    servers = summary["servers"]
    shared, own = servers["shared"]["phases"], servers["own"]["phases"]
    rate = {queue: servers[queue]["phases"]["mixed"]["index"]["records_per_second"] for queue in servers}
    return {
        "shared_rate": f"{rate['shared']:.1f}",
        "own_rate": f"{rate['own']:.1f}",
        "alone_rate": f"{own['indexing alone']['index']['records_per_second']:.1f}",
        "speedup": f"{rate['own'] / max(rate['shared'], 1e-9):.1f}",
        "alone_searches": f"{shared['searches alone']['searches']['per_second']:.1f}",
        "shared_searches": f"{shared['mixed']['searches']['per_second']:.1f}",
        "own_searches": f"{own['mixed']['searches']['per_second']:.1f}",
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8, help="searching clients (default: 8)")
    parser.add_argument("--pipeline", default="search", help="the pipeline they ask (default: search)")
    parser.add_argument("--rate", type=float, default=200.0, help="records per second asked (default: 200)")
    parser.add_argument("--batch", type=int, default=10, help="records per index request (default: 10)")
    parser.add_argument("--words", type=int, default=RECORD_WORDS, help=f"words per record (default: {RECORD_WORDS})")
    parser.add_argument(
        "--base-records", type=int, default=4000, help="records in the store at the start (default: 4000)"
    )
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each round and phase (default: 30)")
    parser.add_argument("--rounds", type=int, default=2, help="mixed rounds per server (default: 2)")
    parser.add_argument("--query-threads", type=int, default=1, help="the servers' --query-threads (default: 1)")
    parser.add_argument("--out", default="docs/benchmarks/load/index_under_search", help="report path without suffix")
    parser.add_argument("--from-json", action="store_true", help="re-render the report from its JSON, no measuring")
    return parser


def main() -> None:
    args = _parser().parse_args()
    settings = {
        key: getattr(args, key) for key in ("clients", "pipeline", "rate", "batch", "words", "seconds", "rounds")
    }
    settings.update(base_records=args.base_records, query_threads=args.query_threads)
    run_report(MODULE, args, settings, lambda work, base: {"servers": measure(work, base, args, questions())}, render)


if __name__ == "__main__":
    main()
