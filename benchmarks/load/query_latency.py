"""Latency of a question under load, with torch's default threads (the old behaviour) and with the
question's work on ``DPR_QUERY_THREADS`` threads (the new one), in the same run.

(a) quiet and (b) beside a background load (processes encoding passages on 2 threads in a loop):
the p50/p95 per question of pipelines/dense.yml, search.yml and qa.yml, the two behaviours
alternating question by question in one process. That process is run twice: with OpenMP's default
wait policy (idle threads spin for a while after each parallel region) and with idle threads
sleeping (``OMP_WAIT_POLICY=PASSIVE``, ``haystack serve``'s default): the old behaviour's idle threads
are in the same process as the new behaviour's questions, as batch work is beside questions in a
server. (c) ``haystack serve`` answering qa.yml for 1 client, then for 8 clients at once, once per
behaviour (``--query-threads``). Ratios: p50 under load / quiet (goal ≤ 2×) and 8-client p50 /
1-client p50 (goal ≤ 4×); the results of the two behaviours and of the clients are compared. The
store is examples/corpus.jsonl indexed in a temporary folder, or the shared pool (``--pool``, from
``$DPR_DATA_DIR``), or a given store (``--store``).

    python -m benchmarks.load.query_latency
    python -m benchmarks.load.query_latency --questions 5   # a short check
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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
from dpr_components.evaluation.tables import markdown_table
from dpr_components.evaluation.templates import fill_template, sibling_template
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.threads import QUERY_THREADS_ENV, WAIT_POLICY_ENV

PIPELINE_NAMES = ["dense", "search", "qa"]
SERVED = "qa"
BURST_ROUNDS = 5
CORPUS = REPO_ROOT / "examples" / "corpus.jsonl"
QUESTIONS = REPO_ROOT / "examples" / "questions.jsonl"
LOAD_GOAL, CLIENTS_GOAL = 2.0, 4.0
MODULE = "benchmarks.load.query_latency"
RESULTS = REPO_ROOT / "docs" / "benchmarks" / "load" / "load"
TEMPLATE = sibling_template(__file__, "query_latency.md.template")
SERVED_TEMPLATE = sibling_template(__file__, "query_latency_served.md.template")
# OMP_WAIT_POLICY of the process measuring (a) and (b); None keeps OpenMP's default
WAIT_POLICIES: dict[str, str | None] = {"spin": None, "passive": "PASSIVE"}
WAIT_POLICY_LABELS = {
    "spin": "OpenMP's default (idle threads spin)",
    "passive": "`OMP_WAIT_POLICY=PASSIVE` (idle threads sleep; `haystack serve`'s default)",
}


def questions(count: int) -> list[str]:
    """The first ``count`` questions of examples/questions.jsonl (cycled when it has fewer)."""
    lines = [json.loads(line)["question"] for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line]
    return [lines[i % len(lines)] for i in range(count)]


def build_store(args: argparse.Namespace, work: Path) -> Path:
    """The store to search: ``--store``, the pool (``--pool``) or examples/corpus.jsonl indexed in ``work``."""
    if args.store:
        return Path(args.store)
    if args.pool:
        from dpr_components.encoders.bundled import BUNDLED_MINILM
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


def measure(
    runners: dict[str, Runner], asked: list[str], behaviours: dict[str, int], min_seconds: float
) -> dict[str, Any]:
    """Per pipeline and behaviour: the seconds and outputs of every question, behaviours alternating.
    The questions are asked again, in whole rounds, until a pipeline has run for ``min_seconds``: a
    question of a few milliseconds would otherwise sample the background load over a second or so."""
    out: dict[str, Any] = {}
    for name, runner in runners.items():
        out[name] = {b: {"seconds": [], "outputs": []} for b in behaviours}
        for count in behaviours.values():  # warm: first-call costs out of the timings
            with query_threads(count):
                runner.run(asked[0])
        start = time.perf_counter()
        rounds = 0
        while rounds == 0 or time.perf_counter() - start < min_seconds:
            _ask_round(runner, asked, behaviours, out[name])
            rounds += 1
    return out


def _ask_round(runner: Runner, asked: list[str], behaviours: dict[str, int], out: dict[str, Any]) -> None:
    """Every question once per behaviour, the behaviours taking turns."""
    for i, question in enumerate(asked):
        order = list(behaviours) if i % 2 == 0 else list(reversed(behaviours))
        for b in order:
            with query_threads(behaviours[b]):
                seconds, found = timed(partial(runner.run, question))
            out[b]["seconds"].append(seconds)
            out[b]["outputs"].append(found)


@contextmanager
def background_load(processes: int, threads: int) -> Iterator[None]:
    """``processes`` processes encoding passages on ``threads`` torch threads each, until the block ends."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DPR_ENCODE_THREADS": str(threads)}
    for name in ("OMP_NUM_THREADS", WAIT_POLICY_ENV):  # the load keeps OpenMP's defaults: a fixed load
        env.pop(name, None)
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
    same = all([key for key, _ in x] == [key for key, _ in y] for x, y in zip(a, b, strict=True))
    gaps = [abs(sx - sy) for x, y in zip(a, b, strict=True) for (_, sx), (_, sy) in zip(x, y, strict=False)]
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
                "asked": {"quiet": len(quiet), "loaded": len(loaded)},
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
    """The markdown report: ``query_latency.md.template`` filled with :func:`report_values`."""
    return fill_template(TEMPLATE, report_values(summary, command))


def report_values(s: dict[str, Any], command: str) -> dict[str, object]:
    """The values of the report's template: the machine, the behaviours compared, the tables of (a) and
    (b), section (c) and the command."""
    behaviours = s["behaviours"]
    return {
        "cpu": s["cpu"],
        "cores": s["cores"],
        "torch_threads": s["torch_default_threads"],
        "faiss_threads": s["faiss_default_threads"],
        "load_start": f"{s['load_average'][0]:.2f}",
        "load_end": f"{s['load_average'][1]:.2f}",
        "store": s["store"],
        "passages": s["passages"],
        "questions": s["questions"],
        "threads_env": QUERY_THREADS_ENV,
        "old_threads": behaviours["old"],
        "new_threads": behaviours["new"],
        "load_processes": s["load"]["processes"],
        "load_threads": s["load"]["threads"],
        "wait_policies": "; ".join(f"*{policy}*: {WAIT_POLICY_LABELS[policy]}" for policy in s["wait_policies"]),
        "min_seconds": f"{s['min_seconds']:g}",
        "latency_table": "\n".join(_latency_table(s)),
        "load_goal": f"{LOAD_GOAL:g}",
        "results_table": "\n".join(_results_table(s)),
        "runs": _runs(s),
        "served": _served(s),
        "command": command,
    }


def _latency_table(s: dict[str, Any]) -> list[str]:
    """Sections (a) and (b): latency per pipeline, behaviour and idle-thread policy."""
    table = [
        [
            name,
            b,
            policy,
            f"{row[b]['quiet']['p50_ms']:.1f}",
            f"{row[b]['quiet']['p95_ms']:.1f}",
            f"{row[b]['loaded']['p50_ms']:.1f}",
            f"{row[b]['loaded']['p95_ms']:.1f}",
            f"{row[b]['loaded_over_quiet_p50']:.2f}×",
            f"{row[b]['asked']['quiet']} / {row[b]['asked']['loaded']}",
        ]
        for policy, pipelines in s["wait_policies"].items()
        for name, row in pipelines.items()
        for b in s["behaviours"]
    ]
    columns = ["pipeline", "threads", "idle threads", "quiet p50", "quiet p95", "loaded p50", "loaded p95"]
    return markdown_table([*columns, "loaded / quiet p50", "asked"], table, "lllrrrrrr")


def _runs(s: dict[str, Any]) -> str:
    """The loaded / quiet p50 of every run, per pipeline, behaviour and idle-thread policy, its spread and
    whether every run met the goal ("" for a single run: the table above is that run)."""
    runs = s.get("runs") or []
    if len(runs) < 2:
        return ""
    rows = []
    for policy, pipelines in runs[0].items():
        for name in pipelines:
            for b in s["behaviours"]:
                ratios = [run[policy][name][b]["loaded_over_quiet_p50"] for run in runs]
                spread = f"{min(ratios):.2f}× / {statistics.median(ratios):.2f}× / {max(ratios):.2f}×"
                met = "yes" if max(ratios) <= LOAD_GOAL else f"no ({sum(r > LOAD_GOAL for r in ratios)} of {len(runs)})"
                rows.append([name, b, policy, *(f"{r:.2f}×" for r in ratios), spread, met])
    columns = ["pipeline", "threads", "idle threads", *(f"run {i + 1}" for i in range(len(runs)))]
    table = markdown_table([*columns, "min / median / max", f"≤ {LOAD_GOAL:g}× in every run"], rows,
                           "lll" + "r" * (len(runs) + 1) + "l")  # fmt: skip
    return (
        f"\n### Across {len(runs)} runs\n\nThe loaded / quiet p50 of each run, (a) and (b) measured again in new "
        "processes each time, one after the other in this run (the table above is run 1):\n\n" + "\n".join(table) + "\n"
    )


def _results_table(s: dict[str, Any]) -> list[str]:
    """Whether the two behaviours found the same results, per pipeline, idle-thread policy and condition."""
    check = [
        [name, policy, c, "yes" if r["same_ranking"] else "NO", f"{r['max_score_gap']:.2e}"]
        for policy, pipelines in s["wait_policies"].items()
        for name, row in pipelines.items()
        for c, r in row["results"].items()
    ]
    return markdown_table(
        ["pipeline", "idle threads", "condition", "same ids / answers, same order", "largest score gap"],
        check,
        "lllll",
    )


def _served(s: dict[str, Any]) -> str:
    """Section (c), ``query_latency_served.md.template`` filled: the served pipeline with one client, many
    clients and bursts ("" when not measured)."""
    if not s.get("served"):
        return ""
    return fill_template(
        SERVED_TEMPLATE,
        {
            "pipeline": SERVED,
            "clients": s["clients"],
            "burst_rounds": BURST_ROUNDS,
            "table": "\n".join(_served_table(s)),
            "clients_goal": f"{CLIENTS_GOAL:g}",
            "same_answers": "yes" if s["served"]["same_answers_old_new"] else "NO",
            "little_law": little_law_note(s["served"]["new"], s["clients"], s["cores"]),
        },
    )


def _served_table(s: dict[str, Any]) -> list[str]:
    """Per behaviour: 1 client, many clients and bursts (ms), their ratios and whether every client got
    the same answers."""
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
        if b in s["behaviours"]
    ]
    columns = [
        "threads",
        "1 client p50",
        "1 client p95",
        f"{s['clients']} clients p50",
        f"{s['clients']} clients p95",
    ]
    burst = [f"burst of {s['clients']} p50", "burst ratio p50"]
    return markdown_table([*columns, "ratio p50", *burst, "same answers for every client"], table, "lrrrrrrrl")


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


def in_process(args: argparse.Namespace, store: Path, asked: list[str]) -> dict[str, Any]:
    """(a) and (b) in this process: both behaviours on every pipeline, quiet and beside the load."""
    import faiss
    import torch

    behaviours = {"old": torch.get_num_threads(), "new": args.query_threads}
    runners = {name: Runner(name, store) for name in PIPELINE_NAMES}
    policy = os.environ.get(WAIT_POLICY_ENV, "OpenMP's default")
    log(f"(a) quiet, wait policy {policy}: {len(asked)} questions x {len(runners)} pipelines x 2 behaviours")
    conditions = {"quiet": measure(runners, asked, behaviours, args.min_seconds)}
    log(f"(b) beside {args.load_processes} process(es) encoding on {args.load_threads} threads")
    with background_load(args.load_processes, args.load_threads):
        conditions["loaded"] = measure(runners, asked, behaviours, args.min_seconds)
    return {
        "behaviours": behaviours,
        "faiss_default_threads": faiss.omp_get_max_threads(),
        "passages": runners["dense"].pipeline.get_component("dense").document_store.count_documents(),
        "pipelines": summarise(conditions, behaviours),
    }


def in_child(args: argparse.Namespace, store: Path, policy: str) -> dict[str, Any]:
    """:func:`in_process` in a new process whose OpenMP wait policy is ``policy`` (read once, when torch
    loads OpenMP, so each policy needs its own process)."""
    env = {k: v for k, v in os.environ.items() if k != WAIT_POLICY_ENV}
    env["PYTHONPATH"] = str(REPO_ROOT)
    if WAIT_POLICIES[policy] is not None:
        env[WAIT_POLICY_ENV] = str(WAIT_POLICIES[policy])
    with tempfile.TemporaryDirectory(prefix="load-in-process-") as folder:
        out = Path(folder) / "in_process.json"
        command = [sys.executable, "-m", MODULE, "--in-process-json", str(out), "--store", str(store)]
        command += ["--questions", str(args.questions), "--query-threads", str(args.query_threads)]
        command += ["--min-seconds", str(args.min_seconds)]
        command += ["--load-processes", str(args.load_processes), "--load-threads", str(args.load_threads)]
        subprocess.run(command, cwd=REPO_ROOT, env=env, check=True)
        return dict(json.loads(out.read_text(encoding="utf-8")))


def _parser() -> argparse.ArgumentParser:
    """The benchmark's options."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=20, help="questions per measurement (default: 20)")
    parser.add_argument(
        "--min-seconds",
        type=float,
        default=20.0,
        help="ask the questions again until each pipeline has run this long per condition (default: 20)",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="(a) and (b) measured this many times, each in new processes; the page gives every run's ratio "
        "and their spread (default: 1)",
    )
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients of the server (default: 8)")
    parser.add_argument("--query-threads", type=int, default=1, help="the new behaviour's threads (default: 1)")
    parser.add_argument("--load-processes", type=int, default=1, help="background encoding processes (default: 1)")
    parser.add_argument("--load-threads", type=int, default=2, help="torch threads of each (default: 2)")
    parser.add_argument("--store", help="an existing store indexed with pipelines/index.yml's passage encoder")
    parser.add_argument("--pool", action="store_true", help="the shared pool of $DPR_DATA_DIR (built on first use)")
    parser.add_argument("--out", default=str(RESULTS.relative_to(REPO_ROOT)), help="report path without suffix")
    parser.add_argument("--from-json", action="store_true", help="re-render the report from its JSON, no measuring")
    parser.add_argument("--in-process-json", type=Path, help=argparse.SUPPRESS)  # a child's (a) and (b)
    return parser


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.from_json:
        summary = json.loads(Path(args.out).with_suffix(".json").read_text(encoding="utf-8"))
        command = summary.get("command", command_line(MODULE, []))
        write_report(Path(args.out), summary, render(summary, command))
        return
    asked = questions(args.questions)
    if args.in_process_json:
        atomic_write_text(args.in_process_json, json.dumps(in_process(args, Path(args.store), asked)))
        return
    if os.environ.get("OMP_NUM_THREADS"):
        log(f"note: OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} sets torch's default, the old behaviour")
    summary = measure_all(args, asked)
    command = command_line(MODULE, sys.argv[1:])
    summary["command"] = command
    write_report(Path(args.out), summary, render(summary, command))
    print_summary(summary, args)


def measure_all(args: argparse.Namespace, asked: list[str]) -> dict[str, Any]:
    """Every condition measured (in child processes and against servers), as the report's summary."""
    start_load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="load-benchmark-") as folder:
        work = Path(folder)
        store = build_store(args, work)
        runs = []
        for run in range(args.runs):
            if args.runs > 1:
                log(f"run {run + 1} of {args.runs}")
            runs.append({policy: in_child(args, store, policy) for policy in WAIT_POLICIES})
        measured = runs[0]
        first = next(iter(measured.values()))
        behaviours = first["behaviours"]
        served_rows = served(store, work, asked, behaviours, args.clients)
    texts = {b: [[text for text, _ in found] for found in served_rows[b]["answers"]] for b in behaviours}
    served_rows["same_answers_old_new"] = texts["old"] == texts["new"]
    return {
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "torch_default_threads": behaviours["old"],
        "faiss_default_threads": first["faiss_default_threads"],
        "load_average": [start_load, os.getloadavg()[0]],
        "store": "examples/corpus.jsonl"
        if not (args.store or args.pool)
        else ("the pool" if args.pool else args.store),
        "passages": first["passages"],
        "questions": len(asked),
        "min_seconds": args.min_seconds,
        "behaviours": behaviours,
        "load": {"processes": args.load_processes, "threads": args.load_threads},
        "clients": args.clients,
        "wait_policies": {policy: m["pipelines"] for policy, m in measured.items()},
        "runs": [{policy: m["pipelines"] for policy, m in run.items()} for run in runs],
        "served": served_rows,
    }


def print_summary(summary: dict[str, Any], args: argparse.Namespace) -> None:
    """The ratios of the report on the terminal."""
    behaviours, served_rows = summary["behaviours"], summary["served"]
    for policy, pipelines in summary["wait_policies"].items():
        for name, row in pipelines.items():
            print(
                f"{name}, {policy}: loaded/quiet p50 old {row['old']['loaded_over_quiet_p50']:.2f}x, "
                f"new {row['new']['loaded_over_quiet_p50']:.2f}x; quiet p50 old {row['old']['quiet']['p50_ms']:.1f} "
                f"ms, new {row['new']['quiet']['p50_ms']:.1f} ms; same results: {row['results']}"
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
