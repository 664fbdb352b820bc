"""Time to first answer from the command line: `haystack run pipelines/search.yml -q ...` on a store.

Each repeat starts fresh processes: the whole command (wall and CPU time), then one process that
times each phase the command goes through (imports, question-encoder load, first encoding, store
opening with the first BM25 and dense searches, the hybrid search, the garbage collection before
exit, the interpreter's shutdown), so the total can be split.
Writes docs/benchmarks/cli/first_answer.md/json.

    python -m benchmarks.cli.first_answer --store indexes/pool
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import command_line, write_report
from dpr_components.evaluation.tables import produced_by, table_header

QUESTION = "who wrote hamlet"

PHASES = r"""
import json, sys, time
marks = [("start", time.perf_counter())]
def mark(name):
    marks.append((name, time.perf_counter()))
import haystack
mark("import haystack (imports torch)")
from dpr_components.cli.main import ending_process
from dpr_components.pipeline_files.loading import load_pipeline
mark("import our command line")
with ending_process():
    pipeline = load_pipeline("pipelines/search.yml", sys.argv[1], require_stores=True)
    mark("build the pipeline from YAML (imports the store: FAISS, SciPy)")
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
    del pipeline, retriever, store
mark("collect what the command left (closes the store)")
phases = [(name, t - marks[i][1]) for i, (name, t) in enumerate(marks[1:])]
imported = sorted(m for m in ("transformers", "sentence_transformers", "datasets", "sklearn", "pandas") if m in sys.modules)
print(json.dumps({"phases": phases, "imported": imported, "end": time.time()}))
"""


def _command(store: str) -> list[str]:
    haystack = Path(sys.executable).with_name("haystack")
    return [str(haystack), "run", "pipelines/search.yml", "--store", store, "-q", QUESTION, "--top-k", "1"]


# The same command with one saving taken back, to show what each is worth in the same run.
# main(argv) skips ending_process(); importing transformers' model code first adds what the question
# encoder cost when it loaded through transformers (the import and the slower shutdown; not the
# model load itself, which takes about as long both ways).
VARIANTS = {
    "haystack run": None,
    "without freezing the garbage collector": "import sys; from dpr_components.cli.main import main; sys.exit(main(sys.argv[1:]))",
    "with transformers' model code imported first": (
        "import sys, transformers.modeling_utils; from dpr_components.cli.main import main; sys.exit(main())"
    ),
}


def _variant(code: str | None, store: str) -> list[str]:
    command = _command(store)
    return command if code is None else [sys.executable, "-c", code, *command[1:]]


def _timed(command: list[str]) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def build_parser() -> argparse.ArgumentParser:
    """The command's options."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default="indexes/pool")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="docs/benchmarks/cli/first_answer")
    return parser


def measure(store: str, repeats: int) -> tuple[dict[str, list[float]], dict[str, list[float]], list, list[str]]:
    """Wall and CPU seconds of every variant, ``repeats`` times interleaved, each repeat's phases and the
    heavy modules the command imported."""
    walls: dict[str, list[float]] = {name: [] for name in VARIANTS}
    cpus: dict[str, list[float]] = {name: [] for name in VARIANTS}
    phases = []
    imported: list[str] = []
    _timed(_command(store))  # warm the file cache once
    for _ in range(repeats):
        for name, code in VARIANTS.items():  # interleaved, so load changes hit every variant alike
            wall, cpu, _ = _timed(_variant(code, store))
            walls[name].append(wall)
            cpus[name].append(cpu)
        _, _, out = _timed([sys.executable, "-c", PHASES, store, QUESTION])
        ended = time.time()
        run = json.loads(out.strip().splitlines()[-1])
        # Interpreter shutdown: from the script's last line to the parent seeing the process end.
        phases.append([*run["phases"], ("interpreter shutdown", ended - run["end"])])
        imported = run["imported"]
    return walls, cpus, phases, imported


def _timings(walls: list[float], cpus: list[float]) -> dict[str, Any]:
    return {
        "wall_s": walls,
        "cpu_s": cpus,
        "median_wall_s": statistics.median(walls),
        "median_cpu_s": statistics.median(cpus),
    }


def render(summary: dict[str, Any]) -> str:
    """The report of ``summary``."""
    variants, median_phase = summary["variants"], summary["median_phase_s"]
    main_cpu = variants[next(iter(VARIANTS))]["median_cpu_s"]
    total = sum(median_phase.values())
    variant_header = [
        "command",
        "wall time (s), median",
        "CPU time, user + system (s), median",
        "CPU vs `haystack run`",
        "wall times (s)",
    ]
    lines = [
        "# Time to first answer from the command line",
        "",
        f'`haystack run pipelines/search.yml --store {summary["store"]} -q "{QUESTION}" --top-k 1`, a fresh process '
        f"each time (file cache warm), {summary['repeats']} repeats. The machine has 2 cores shared with other work "
        f"(1-minute load average {summary['load_average_1min_at_end']:.1f} at the end), so CPU time is the steadier "
        "number.",
        "",
        *table_header(variant_header, "lrrrl"),
        *[
            f"| {name} | {v['median_wall_s']:.2f} | {v['median_cpu_s']:.2f} | {v['median_cpu_s'] / main_cpu:.2f}x | "
            f"{', '.join(f'{w:.2f}' for w in v['wall_s'])} |"
            for name, v in variants.items()
        ],
        "",
        "The two other rows take one saving back each: `main(argv)` runs the command without "
        "`ending_process()` (the garbage collector is not frozen, so the interpreter's shutdown traverses "
        "every object), and importing `transformers.modeling_utils` first adds what loading the question "
        "encoder through transformers cost besides the model load itself (the import and a longer shutdown).",
        "",
        "## Where the time goes (one process timing each phase, median wall seconds)",
        "",
        *table_header(["phase", "s", "share"], "lrr"),
        *[f"| {name} | {seconds:.2f} | {100 * seconds / total:.0f}% |" for name, seconds in median_phase.items()],
        f"| total | {total:.2f} | |",
        "",
        "Heavy libraries imported on this path (transformers, sentence-transformers, datasets, scikit-learn, "
        f"pandas): {', '.join(summary['heavy_modules_imported']) or 'none'}.",
        "",
        *produced_by(summary["command"]),
    ]
    return "\n".join(lines)


def main() -> None:
    args = build_parser().parse_args()
    walls, cpus, phases, imported = measure(args.store, args.repeats)
    names = [name for name, _ in phases[0]]
    main_name = next(iter(VARIANTS))
    summary = {
        "command": command_line("benchmarks.cli.first_answer", sys.argv[1:]),
        "store": args.store,
        "repeats": args.repeats,
        **_timings(walls[main_name], cpus[main_name]),
        "variants": {name: _timings(walls[name], cpus[name]) for name in VARIANTS},
        "median_phase_s": {name: statistics.median(run[i][1] for run in phases) for i, name in enumerate(names)},
        "heavy_modules_imported": imported,
        "load_average_1min_at_end": os.getloadavg()[0],
    }
    text = render(summary)
    write_report(Path(args.out), summary, text)
    print(text)


if __name__ == "__main__":
    main()
