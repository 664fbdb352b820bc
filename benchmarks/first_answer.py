"""Time to first answer from the command line: `haystack run pipelines/search.yml -q ...` on a store.

Each repeat starts fresh processes: the whole command (wall and CPU time), then one process that
times each phase the command goes through (imports, question-encoder load, first encoding, store
opening with the first BM25 and dense searches, the hybrid search), so the total can be split.
Writes docs/benchmarks/first_answer.md/json.

    python -m benchmarks.first_answer --store indexes/pool
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from dpr_components.io_utils import atomic_write_text

QUESTION = "who wrote hamlet"

PHASES = r"""
import json, sys, time
marks = [("start", time.perf_counter())]
def mark(name):
    marks.append((name, time.perf_counter()))
import haystack
mark("import haystack (imports torch)")
from dpr_components.cli.pipeline_loading import load_pipeline
mark("import our command line")
import transformers.models.bert.modeling_bert
mark("import transformers' model code")
pipeline = load_pipeline("pipelines/search.yml", sys.argv[1], require_stores=True)
mark("build the pipeline from YAML")
retriever = pipeline.get_component("hybrid")
retriever.dense.embedder.warm_up()
mark("load the question encoder")
embedding = retriever.dense.embedder.run(query=sys.argv[2])["embedding"]
mark("encode the question")
store = retriever.document_store
store.bm25_retrieval(sys.argv[2], 1)
mark("open the store + BM25 index, first BM25 search")
store.embedding_retrieval(embedding, 1)
mark("load the FAISS index, first dense search")
retriever.run(query=sys.argv[2], query_embedding=embedding, top_k=1)
mark("hybrid search (top-2000 lists)")
print(json.dumps([(name, t - marks[i][1]) for i, (name, t) in enumerate(marks[1:])]))
"""


def _command(store: str) -> list[str]:
    haystack = Path(sys.executable).with_name("haystack")
    return [str(haystack), "run", "pipelines/search.yml", "--store", store, "-q", QUESTION, "--top-k", "1"]


def _timed(command: list[str]) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default="indexes/pool")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="docs/benchmarks/first_answer")
    args = parser.parse_args()
    walls, cpus, phases = [], [], []
    _timed(_command(args.store))  # warm the file cache once
    for _ in range(args.repeats):
        wall, cpu, _ = _timed(_command(args.store))
        walls.append(wall)
        cpus.append(cpu)
        _, _, out = _timed([sys.executable, "-c", PHASES, args.store, QUESTION])
        phases.append(json.loads(out.strip().splitlines()[-1]))
    names = [name for name, _ in phases[0]]
    median_phase = {name: statistics.median(run[i][1] for run in phases) for i, name in enumerate(names)}
    load = os.getloadavg()[0]
    command = "python -m benchmarks.first_answer " + shlex.join(sys.argv[1:])
    summary = {"command": command, "store": args.store, "repeats": args.repeats, "wall_s": walls, "cpu_s": cpus,
               "median_wall_s": statistics.median(walls), "median_cpu_s": statistics.median(cpus),
               "median_phase_s": median_phase, "load_average_1min_at_end": load}
    out = Path(args.out)
    atomic_write_text(out.with_suffix(".json"), json.dumps(summary, indent=1) + "\n")
    total = sum(median_phase.values())
    lines = [
        "# Time to first answer from the command line",
        "",
        f"`haystack run pipelines/search.yml --store {args.store} -q \"{QUESTION}\" --top-k 1`, a fresh process each time "
        f"(file cache warm), {args.repeats} repeats. The machine has 2 cores shared with other work "
        f"(1-minute load average {load:.1f} at the end), so CPU time is the steadier number.",
        "",
        "| measure | median | runs |",
        "|---|---:|---|",
        f"| wall time (s) | {statistics.median(walls):.2f} | {', '.join(f'{w:.2f}' for w in walls)} |",
        f"| CPU time, user + system (s) | {statistics.median(cpus):.2f} | {', '.join(f'{c:.2f}' for c in cpus)} |",
        "",
        "## Where the time goes (one process timing each phase, median wall seconds)",
        "",
        "| phase | s | share |",
        "|---|---:|---:|",
        *[f"| {name} | {seconds:.2f} | {100 * seconds / total:.0f}% |" for name, seconds in median_phase.items()],
        f"| total | {total:.2f} | |",
        "",
        "Produced by:",
        "",
        "```",
        command,
        "```",
        "",
    ]
    atomic_write_text(out.with_suffix(".md"), "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
