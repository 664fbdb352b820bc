"""Latency of a question under load, with torch's default threads (the old behaviour) and with the
question's work on ``DPR_QUERY_THREADS`` threads (the new one), in the same run.

(a) quiet and (b) beside a background load (processes encoding passages on 2 threads in a loop):
the p50/p95 per question of pipelines/dense.yml, search.yml and qa.yml, run in this process, the
two behaviours alternating question by question. (c) ``haystack serve`` answering qa.yml for 1 client,
then for 8 clients at once, once per behaviour (``--query-threads``). Ratios: p50 under load / quiet
(goal ≤ 2×) and 8-client p50 / 1-client p50 (goal ≤ 4×); the results of the two behaviours and of
the clients are compared. The store is examples/corpus.jsonl indexed in a temporary folder, or the
shared pool (``--pool``, from ``$DPR_DATA_DIR``), or a given store (``--store``).

    python -m benchmarks.load.query_latency
    python -m benchmarks.load.query_latency --questions 5   # a short check
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.common import REPO_ROOT, command_line, cpu_name, latency_ms, log, timed, write_report
from benchmarks.load.served_clients import bursts, clients, running_server, write_served_pipelines
from dpr_components.evaluation.tables import markdown_table, produced_by
from dpr_components.utils.threads import QUERY_THREADS_ENV

PIPELINE_NAMES = ["dense", "search", "qa"]
SERVED = "qa"
BURST_ROUNDS = 5
CORPUS = REPO_ROOT / "examples" / "corpus.jsonl"
QUESTIONS = REPO_ROOT / "examples" / "questions.jsonl"
LOAD_GOAL, CLIENTS_GOAL = 2.0, 4.0


def questions(count: int) -> list[str]:
    """The first ``count`` questions of examples/questions.jsonl (cycled when it has fewer)."""
    lines = [json.loads(line)["question"] for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line]
    return [lines[i % len(lines)] for i in range(count)]


def build_store(args: argparse.Namespace, work: Path) -> Path:
    """The store to search: ``--store``, the pool (``--pool``) or examples/corpus.jsonl indexed in ``work``."""
    if args.store:
        return Path(args.store)
    if args.pool:
        from dpr_components.encoders.text_encoder import BUNDLED_MINILM
        from dpr_components.evaluation.pool import pool_store
        from dpr_components.utils.settings import cache_dir, data_dir

        if not (data_dir() / "wiki" / "documents.jsonl").is_file():
            raise SystemExit(f"--pool: no pool at {data_dir()} (set DPR_DATA_DIR to the shared data folder)")
        path = cache_dir() / "indexes" / "pool-minilm"
        pool_store(BUNDLED_MINILM, path)
        return path
    from dpr_components.cli.main import main

    store = work / "store"
    argv = ["run", str(REPO_ROOT / "pipelines" / "index.yml"), "--input", f"path={CORPUS}", "--store", str(store)]
    if main([*argv, "--set", "embedder.cache_dir=null", "--set", "embedder.progress_bar=false"]) != 0:
        raise SystemExit("indexing examples/corpus.jsonl failed")
    return store


class Runner:
    """One pipeline file on the store: its question inputs, its run, a comparable digest of its outputs."""

    def __init__(self, name: str, store: Path) -> None:
        from dpr_components.pipeline_files.loading import load_pipeline, load_pipeline_spec

        path = REPO_ROOT / "pipelines" / f"{name}.yml"
        spec = load_pipeline_spec(path)
        targets = spec["inputs"]["query"]
        self.targets = [targets] if isinstance(targets, str) else list(targets)
        self.output = str(next(iter(spec["outputs"].values())))
        self.pipeline = load_pipeline(path, str(store))
        self.pipeline.warm_up()

    def run(self, question: str) -> list[tuple[str, float]]:
        """The outputs for ``question`` as (id or answer text, score) pairs, best first."""
        data: dict[str, dict[str, str]] = {}
        for target in self.targets:
            component, field = target.split(".")
            data.setdefault(component, {})[field] = question
        component, field = self.output.split(".")
        found = self.pipeline.run(data)[component][field]
        return [(getattr(item, "id", None) or str(getattr(item, "data", "")), float(item.score or 0)) for item in found]


@contextmanager
def query_threads(count: int) -> Iterator[None]:
    """``$DPR_QUERY_THREADS`` = ``count`` while inside."""
    before = os.environ.get(QUERY_THREADS_ENV)
    os.environ[QUERY_THREADS_ENV] = str(count)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(QUERY_THREADS_ENV, None)
        else:
            os.environ[QUERY_THREADS_ENV] = before


def measure(runners: dict[str, Runner], asked: list[str], behaviours: dict[str, int]) -> dict[str, Any]:
    """Per pipeline and behaviour: the seconds and outputs of every question, behaviours alternating."""
    out: dict[str, Any] = {}
    for name, runner in runners.items():
        out[name] = {b: {"seconds": [], "outputs": []} for b in behaviours}
        for b, count in behaviours.items():  # warm: first-call costs out of the timings
            with query_threads(count):
                runner.run(asked[0])
        for i, question in enumerate(asked):
            order = list(behaviours) if i % 2 == 0 else list(reversed(behaviours))
            for b in order:
                with query_threads(behaviours[b]):
                    seconds, found = timed(partial(runner.run, question))
                out[name][b]["seconds"].append(seconds)
                out[name][b]["outputs"].append(found)
    return out


@contextmanager
def background_load(processes: int, threads: int) -> Iterator[None]:
    """``processes`` processes encoding passages on ``threads`` torch threads each, until the block ends."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DPR_ENCODE_THREADS": str(threads)}
    env.pop("OMP_NUM_THREADS", None)
    command = [sys.executable, "-m", "benchmarks.load.background_load", "--threads", str(threads)]
    started = [
        subprocess.Popen([*command, "--corpus", str(CORPUS)], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(processes)
    ]
    try:
        for process in started:
            assert process.stdout is not None
            if process.stdout.readline().strip() != "encoding":
                raise SystemExit("the background load did not start")
        yield
    finally:
        for process in started:
            process.terminate()
            process.wait(timeout=30)


def compare(a: list[list[tuple[str, float]]], b: list[list[tuple[str, float]]]) -> dict[str, Any]:
    """Whether two runs found the same ids (or answers) in the same order, and the largest score gap."""
    same = all([key for key, _ in x] == [key for key, _ in y] for x, y in zip(a, b))
    gaps = [abs(sx - sy) for x, y in zip(a, b) for (_, sx), (_, sy) in zip(x, y)]
    return {"same_ranking": same, "max_score_gap": max(gaps, default=0.0)}


def answers(result: dict[str, Any]) -> list[tuple[str, float]]:
    """A served qa result as (answer text, score) pairs."""
    return [(str(a["data"]), float(a["score"] or 0)) for a in result["answers"]]


def served(store: Path, work: Path, asked: list[str], behaviours: dict[str, int], count: int) -> dict[str, Any]:
    """qa.yml under ``haystack serve``: 1 client then ``count`` clients, per behaviour."""
    folder = work / "served_pipelines"
    write_served_pipelines(folder, store, [SERVED])
    out: dict[str, Any] = {}
    for b, threads in behaviours.items():
        log(f"haystack serve --query-threads {threads} ({b}): 1 client, then {count}")
        # old: every request at once, as servers ran before the limit; new: the default limit
        with running_server(folder, work, threads, count if b == "old" else None) as url:
            clients(url, SERVED, asked[:2], 1)  # warm
            one_s, one = clients(url, SERVED, asked, 1)
            many_s, many = clients(url, SERVED, asked, count)
            burst_s = bursts(url, SERVED, (asked * count)[:count], BURST_ROUNDS)
        firsts = [answers(one[q][0]) for q in asked]
        consistent = all(answers(r) == answers(one[q][0]) for q in asked for r in many[q])
        out[b] = {
            "one_client": latency_ms(one_s),
            "clients": latency_ms(many_s),
            "ratio_p50": statistics_ratio(many_s, one_s),
            "burst": latency_ms(burst_s),
            "burst_ratio_p50": statistics_ratio(burst_s, one_s),
            "same_answers_across_clients": consistent,
            "answers": firsts,
        }
    return out


def statistics_ratio(slow: list[float], fast: list[float]) -> float:
    """p50 of ``slow`` over p50 of ``fast``."""
    return latency_ms(slow)["p50_ms"] / latency_ms(fast)["p50_ms"]


def summarise(conditions: dict[str, Any], behaviours: dict[str, int]) -> dict[str, Any]:
    """Latencies, load ratios and result checks per pipeline and behaviour."""
    rows: dict[str, Any] = {}
    for name in conditions["quiet"]:
        rows[name] = {}
        for b in behaviours:
            quiet, loaded = conditions["quiet"][name][b]["seconds"], conditions["loaded"][name][b]["seconds"]
            rows[name][b] = {
                "quiet": latency_ms(quiet),
                "loaded": latency_ms(loaded),
                "loaded_over_quiet_p50": statistics_ratio(loaded, quiet),
            }
        first, second = list(behaviours)
        rows[name]["results"] = {
            condition: compare(
                conditions[condition][name][first]["outputs"], conditions[condition][name][second]["outputs"]
            )
            for condition in conditions
        }
    return rows


def render(summary: dict[str, Any], command: str) -> str:
    """The markdown report."""
    s, behaviours = summary, summary["behaviours"]
    lines = [
        "# Question latency under load",
        "",
        f"{s['cpu']}, {s['cores']} cores; torch's default: {s['torch_default_threads']} intra-op threads, FAISS's "
        f"{s['faiss_default_threads']} OpenMP threads. Load average (1 min) at the start: {s['load_average'][0]:.2f}, "
        f"at the end: {s['load_average'][1]:.2f}. Store: {s['store']} ({s['passages']} passages); "
        f"{s['questions']} questions of examples/questions.jsonl.",
        "",
        f"Behaviours, in the same run: **old** = every question on torch's default threads "
        f"(`{QUERY_THREADS_ENV}={behaviours['old']}`), **new** = a question encoded and searched on "
        f"`{QUERY_THREADS_ENV}={behaviours['new']}` thread(s) (docs/threads.md).",
        "",
        f"## (a) quiet and (b) beside {s['load']['processes']} process(es) encoding passages on "
        f"{s['load']['threads']} threads",
        "",
        "Per question, in this process, the behaviours alternating question by question (ms).",
        "",
    ]
    table = []
    for name, row in s["pipelines"].items():
        for b in behaviours:
            r = row[b]
            table.append(
                [
                    name,
                    b,
                    f"{r['quiet']['p50_ms']:.1f}",
                    f"{r['quiet']['p95_ms']:.1f}",
                    f"{r['loaded']['p50_ms']:.1f}",
                    f"{r['loaded']['p95_ms']:.1f}",
                    f"{r['loaded_over_quiet_p50']:.2f}×",
                ]
            )
    columns = ["pipeline", "threads", "quiet p50", "quiet p95", "loaded p50", "loaded p95", "loaded / quiet p50"]
    lines += markdown_table(columns, table, "llrrrrr")
    lines += [
        "",
        f"Goal: loaded / quiet p50 ≤ {LOAD_GOAL:g}× with the new behaviour.",
        "",
        "Same results, old against new:",
        "",
    ]
    check = [
        [name, c, "yes" if r["same_ranking"] else "NO", f"{r['max_score_gap']:.2e}"]
        for name, row in s["pipelines"].items()
        for c, r in row["results"].items()
    ]
    lines += markdown_table(
        ["pipeline", "condition", "same ids / answers, same order", "largest score gap"], check, "llll"
    )
    if s.get("served"):
        lines += ["", f"## (c) `haystack serve`, {SERVED}.yml: 1 client, then {s['clients']} at once", ""]
        lines += [
            "Per request (ms), quiet apart from the clients. The old server runs every request at once "
            f"(`--concurrent-runs {s['clients']}`); the new one its default, the cores divided by the query "
            "threads, the other requests waiting their turn. *clients*: each client asks the next question "
            f"as soon as it has an answer, so {s['clients']} requests are always waiting; *burst*: "
            f"{s['clients']} questions sent at the same moment, {BURST_ROUNDS} times. With the clients, "
            f"p50 cannot fall below {s['clients']} requests × their work / the cores whatever the order "
            "(Little's law); in a burst, taking turns lets the first requests finish early.",
            "",
        ]
        table = [
            [
                b,
                f"{r['one_client']['p50_ms']:.0f}",
                f"{r['one_client']['p95_ms']:.0f}",
                f"{r['clients']['p50_ms']:.0f}",
                f"{r['clients']['p95_ms']:.0f}",
                f"{r['ratio_p50']:.2f}×",
                f"{r['burst']['p50_ms']:.0f}",
                f"{r['burst_ratio_p50']:.2f}×",
                "yes" if r["same_answers_across_clients"] else "NO",
            ]
            for b, r in s["served"].items()
            if b in behaviours
        ]
        columns = [
            "threads",
            "1 client p50",
            "1 client p95",
            f"{s['clients']} clients p50",
            f"{s['clients']} clients p95",
        ]
        burst = [f"burst of {s['clients']} p50", "burst ratio p50"]
        lines += markdown_table([*columns, "ratio p50", *burst, "same answers for every client"], table, "lrrrrrrrl")
        lines += [
            "",
            f"Goal: {s['clients']}-client p50 / 1-client p50 ≤ {CLIENTS_GOAL:g}× with the new behaviour. "
            f"Old and new answered the same: {'yes' if s['served']['same_answers_old_new'] else 'NO'}.",
            "",
            little_law_note(s["served"]["new"], s["clients"], s["cores"]),
        ]
    lines += ["", *produced_by(command)]
    return "\n".join(lines)


def little_law_note(served: dict[str, Any], clients: int, cores: int) -> str:
    """How close the served clients come to Little's law's floor: with ``clients`` closed-loop clients on
    ``cores`` cores, each request's work on one core, the mean latency is at least clients / cores × the
    mean work (the 1-client mean), whatever the server does short of sharing work between requests."""
    floor = clients / cores
    one, many = served["one_client"], served["clients"]
    mean_ratio = many["mean_ms"] / one["mean_ms"]
    p50_floor = floor * one["mean_ms"] / one["p50_ms"]
    return (
        f"Little's law, new behaviour: if each request is one core's work for as long as it takes alone, "
        f"{clients} clients on {cores} cores wait on average {floor:g}× the 1-client mean; measured "
        f"{mean_ratio:.2f}× ({100 * (mean_ratio / floor - 1):+.1f}% against that). In p50 terms that is "
        f"{p50_floor:.2f}× the 1-client p50 (the mean over the median of the 1-client times): the goal of "
        f"{CLIENTS_GOAL:g}× sits on this line, so runs fall on either side of it with the machine's noise; "
        "only requests sharing work could go clearly below it."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=20, help="questions per measurement (default: 20)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients of the server (default: 8)")
    parser.add_argument("--query-threads", type=int, default=1, help="the new behaviour's threads (default: 1)")
    parser.add_argument("--load-processes", type=int, default=1, help="background encoding processes (default: 1)")
    parser.add_argument("--load-threads", type=int, default=2, help="torch threads of each (default: 2)")
    parser.add_argument("--store", help="an existing store indexed with pipelines/index.yml's passage encoder")
    parser.add_argument("--pool", action="store_true", help="the shared pool of $DPR_DATA_DIR (built on first use)")
    parser.add_argument("--out", default="docs/benchmarks/load", help="report path without suffix")
    parser.add_argument("--from-json", action="store_true", help="re-render the report from its JSON, no measuring")
    args = parser.parse_args()
    if args.from_json:
        summary = json.loads(Path(args.out).with_suffix(".json").read_text(encoding="utf-8"))
        command = summary.get("command", command_line("benchmarks.load.query_latency", []))
        write_report(Path(args.out), summary, render(summary, command))
        return
    if os.environ.get("OMP_NUM_THREADS"):
        log(f"note: OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} sets torch's default, the old behaviour")
    import faiss
    import torch

    behaviours = {"old": torch.get_num_threads(), "new": args.query_threads}
    start_load = os.getloadavg()[0]
    asked = questions(args.questions)
    with tempfile.TemporaryDirectory(prefix="load-benchmark-") as folder:
        work = Path(folder)
        store = build_store(args, work)
        runners = {name: Runner(name, store) for name in PIPELINE_NAMES}
        passages = runners["dense"].pipeline.get_component("dense").document_store.count_documents()
        log(f"(a) quiet: {len(asked)} questions x {len(runners)} pipelines x 2 behaviours")
        conditions = {"quiet": measure(runners, asked, behaviours)}
        log(f"(b) beside {args.load_processes} process(es) encoding on {args.load_threads} threads")
        with background_load(args.load_processes, args.load_threads):
            conditions["loaded"] = measure(runners, asked, behaviours)
        del runners
        time.sleep(1)
        served_rows = served(store, work, asked, behaviours, args.clients)
    texts = {b: [[text for text, _ in found] for found in served_rows[b]["answers"]] for b in behaviours}
    served_rows["same_answers_old_new"] = texts["old"] == texts["new"]
    summary = {
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "torch_default_threads": behaviours["old"],
        "faiss_default_threads": faiss.omp_get_max_threads(),
        "load_average": [start_load, os.getloadavg()[0]],
        "store": "examples/corpus.jsonl"
        if not (args.store or args.pool)
        else ("the pool" if args.pool else args.store),
        "passages": passages,
        "questions": len(asked),
        "behaviours": behaviours,
        "load": {"processes": args.load_processes, "threads": args.load_threads},
        "clients": args.clients,
        "pipelines": summarise(conditions, behaviours),
        "served": served_rows,
    }
    command = command_line("benchmarks.load.query_latency", sys.argv[1:])
    summary["command"] = command
    write_report(Path(args.out), summary, render(summary, command))
    for name, row in summary["pipelines"].items():
        print(
            f"{name}: loaded/quiet p50 old {row['old']['loaded_over_quiet_p50']:.2f}x, "
            f"new {row['new']['loaded_over_quiet_p50']:.2f}x; quiet p50 old {row['old']['quiet']['p50_ms']:.1f} ms, "
            f"new {row['new']['quiet']['p50_ms']:.1f} ms; same results: {row['results']}"
        )
    for b in behaviours:
        r = served_rows[b]
        print(
            f"served {SERVED} {b}: 1 client p50 {r['one_client']['p50_ms']:.0f} ms, {args.clients} clients p50 "
            f"{r['clients']['p50_ms']:.0f} ms, ratio {r['ratio_p50']:.2f}x"
        )
    print(f"served answers same old/new: {served_rows['same_answers_old_new']}; wrote {args.out}.md/.json")


if __name__ == "__main__":
    main()
