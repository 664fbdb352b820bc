"""Benchmark the embedded BM25 index against Lucene (Pyserini) and Haystack's InMemoryBM25Retriever.

Every engine indexes the pool's DPR passages as ``title + "\\n" + text`` and answers the NQ and
SQuAD dev questions; a question counts at k if a top-k passage's text contains an answer. Each
engine runs in its own process, so build time, single-thread queries/s and peak memory are its
own. Run from the repository root:

    python -m benchmarks.bm25.bm25_benchmark
    python -m benchmarks.bm25.bm25_benchmark --from-json   # re-render docs/benchmarks/bm25/bm25.md, measure nothing

Lucene needs ``bash benchmarks/bm25/setup_pyserini.sh`` first (or pass ``--skip-lucene``). The JSON keeps
each engine's first-hit rank per question, from which the report draws its intervals."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

from benchmarks.bm25 import analyzer_parity, bm25_data, lucene_lengths
from benchmarks.bm25.retrieval_metrics import CUTOFFS, ranking_agreement, top_k_accuracy
from benchmarks.common import REPO_ROOT, log
from dpr_components.document_stores.analyzer import EnglishAnalyzer
from dpr_components.evaluation.retrieval_metrics import first_hit_rank_for
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.settings import cache_dir, data_dir

WORKERS = Path(__file__).resolve().parent
DEFAULT_PYSERINI_PYTHON = REPO_ROOT / ".venv-pyserini" / "bin" / "python"
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HAYSTACK_TELEMETRY_ENABLED": "False",
}


def worker_env() -> dict[str, str]:
    env = {**os.environ, **OFFLINE_ENV}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    if "JAVA_HOME" not in env and (javac := shutil.which("javac")):
        env["JAVA_HOME"] = str(Path(javac).resolve().parent.parent)
    return env


def run_worker(command: list[str], out: Path) -> dict:
    log("running " + " ".join(str(part) for part in command))
    completed = subprocess.run(command, env=worker_env(), cwd=REPO_ROOT, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"worker failed with exit code {completed.returncode}: {' '.join(command)}")
    return json.loads(out.read_text(encoding="utf-8"))


def run_python_engine(
    engine: str, folder: Path, results: Path, name: str, repeats: int, stemmer: str = "porter"
) -> dict:
    out = results / f"{name}.json"
    command = [
        sys.executable, str(WORKERS / "bm25_worker.py"), "--engine", engine,
        "--passages", str(folder / "collection" / "passages.jsonl"),
        "--questions", str(folder / "questions.jsonl"), "--out", str(out), "--stemmer", stemmer,
        "--repeats", str(repeats),
    ]  # fmt: skip
    return run_worker(command, out)


def run_lucene(python: Path, folder: Path, results: Path, repeats: int) -> dict:
    out = results / "lucene.json"
    command = [
        str(python), str(WORKERS / "lucene_worker.py"), "run",
        "--collection", str(folder / "collection"), "--index", str(folder / "lucene-index"),
        "--questions", str(folder / "questions.jsonl"), "--out", str(out), "--repeats", str(repeats),
    ]  # fmt: skip
    return run_worker(command, out)


def evaluate(result: dict, data: bm25_data.BenchmarkData) -> dict:
    """Accuracy per dataset, the first-hit rank of every question (in ``data``'s question order, None
    without a hit in the top 100; what the report's intervals are drawn from), plus speed and memory
    figures of one engine's run."""
    text_of = dict(zip(data.passage_ids, data.texts, strict=True))
    by_dataset: dict[str, list[int | None]] = {}
    for question in data.questions:
        ranked = result["ranked"][question.qid]
        # The first passage whose text (not title) contains an answer.
        by_dataset.setdefault(question.dataset, []).append(
            first_hit_rank_for(question.answers, (text_of[passage_id] for passage_id in ranked))
        )
    accuracy = {dataset: top_k_accuracy(hits) for dataset, hits in by_dataset.items()}
    accuracy["all"] = top_k_accuracy([hit for hits in by_dataset.values() for hit in hits])
    return {
        "engine": result["engine"],
        "settings": result.get("settings", {}),
        "num_docs": result["num_docs"],
        "questions": {dataset: len(hits) for dataset, hits in by_dataset.items()},
        "accuracy": accuracy,
        "first_hit_ranks": by_dataset,
        "build_seconds": result["build_seconds"],
        "queries_per_second": result["queries"] / result["query_seconds"],
        "peak_rss_mb": result["peak_rss_mb"],
        "baseline_rss_mb": result.get("baseline_rss_mb"),
    }


def parity(data: bm25_data.BenchmarkData, python: Path, folder: Path, stemmers: list[str]) -> dict:
    """Agreement of our analyzer (for each stemmer) with Lucene's, over all passages and questions."""
    texts = [data.contents(i) for i in range(len(data.passage_ids))] + [q.question for q in data.questions]
    lines = (json.dumps({"id": str(i), "text": text}, ensure_ascii=False) for i, text in enumerate(texts))
    source, terms_file = folder / "parity_texts.jsonl", folder / "parity_lucene_terms.jsonl"
    atomic_write_text(source, "\n".join(lines) + "\n")
    command = [str(python), str(WORKERS / "lucene_worker.py"), "analyze", "--texts", str(source)]
    log("running Lucene's analyzer for the parity check")
    completed = subprocess.run([*command, "--out", str(terms_file)], env=worker_env(), cwd=REPO_ROOT, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"Lucene analysis failed with exit code {completed.returncode}")
    with open(terms_file, encoding="utf-8") as handle:
        lucene_terms = [json.loads(line)["terms"] for line in handle]
    return {
        stemmer: analyzer_parity.compare(texts, lucene_terms, EnglishAnalyzer(stemmer=stemmer).analyze)
        for stemmer in stemmers
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=None, help="default: dpr_components.utils.settings.data_dir()")
    parser.add_argument("--work-dir", type=Path, default=None, help="default: <cache dir>/bm25_benchmark")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "benchmarks" / "bm25" / "bm25.md",
                        help="Markdown report; the JSON goes next to it with a .json suffix")  # fmt: skip
    parser.add_argument("--subset-passages", type=int, default=10_000, help="passages for the InMemory comparison")
    parser.add_argument("--subset-questions", type=int, default=500, help="questions for the InMemory comparison")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--query-repeats", type=int, default=3, help="timed passes over the questions (median)")
    parser.add_argument("--skip-lucene", action="store_true")
    parser.add_argument("--skip-inmemory", action="store_true")
    parser.add_argument("--skip-parity", action="store_true", help="skip the analyzer-vs-Lucene term comparison")
    parser.add_argument("--compare-stemmers", nargs="*", default=["english"],
                        help="extra PyStemmer algorithms to run our index with on the full pool")  # fmt: skip
    parser.add_argument("--pyserini-python", type=Path, default=DEFAULT_PYSERINI_PYTHON)
    parser.add_argument("--from-json", action="store_true", help="re-render --out from its JSON, measure nothing")
    args = parser.parse_args()
    if args.from_json:
        return args
    if min(args.subset_passages, args.subset_questions, args.query_repeats) <= 0:
        parser.error("--subset-passages, --subset-questions and --query-repeats must be positive")
    if not args.skip_lucene and not args.pyserini_python.exists():
        parser.error(f"{args.pyserini_python} not found: run benchmarks/bm25/setup_pyserini.sh or pass --skip-lucene")
    return args


def run_environment() -> dict:
    """How the benchmark process was started: its niceness and the thread variables that were set."""
    variables = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    return {"nice": os.nice(0), "variables": {name: os.environ[name] for name in variables if name in os.environ}}


def render_from_json(out_md: Path, rerendered_by: str) -> None:
    """Rewrite ``out_md`` from the JSON next to it, measuring nothing."""
    from benchmarks.bm25.bm25_report import render_markdown

    report = json.loads(out_md.with_suffix(".json").read_text(encoding="utf-8"))
    atomic_write_text(out_md, render_markdown(report, rerendered_by))
    log(f"re-rendered {out_md} from {out_md.with_suffix('.json')}")


def run_engines(
    args: argparse.Namespace, data: bm25_data.BenchmarkData, small: bm25_data.BenchmarkData, work: Path
) -> tuple[dict[str, dict], dict[str, dict], dict[str, dict]]:
    """Every engine's raw results and evaluation on the full pool, and ours and InMemory's on the subset."""
    full_dir, subset_dir, results_dir = work / "full", work / "subset", work / "results"
    raw: dict[str, dict] = {}
    full: dict[str, dict] = {}
    repeats = args.query_repeats
    raw["ours"] = run_python_engine("ours", full_dir, results_dir, "ours", repeats)
    full["ours"] = evaluate(raw["ours"], data)
    for stemmer in args.compare_stemmers:
        name = f"ours-{stemmer}"
        raw[name] = run_python_engine("ours", full_dir, results_dir, name, repeats, stemmer=stemmer)
        full[name] = evaluate(raw[name], data)
    if not args.skip_lucene:
        raw["lucene"] = run_lucene(args.pyserini_python, full_dir, results_dir, repeats)
        full["lucene"] = evaluate(raw["lucene"], data)
    subset: dict[str, dict] = {}
    if not args.skip_inmemory:
        for engine in ("ours", "inmemory"):
            result = run_python_engine(engine, subset_dir, results_dir, f"subset-{engine}", repeats)
            subset[engine] = evaluate(result, small)
    return raw, full, subset


def lucene_comparisons(raw: dict[str, dict], data: bm25_data.BenchmarkData) -> tuple[dict, dict]:
    """Ranking agreement of our engines with Lucene, and the length-rounding ablation (empty without Lucene)."""
    if "lucene" not in raw:
        return {}, {}
    agreement = {
        name: ranking_agreement(raw[name]["ranked"], raw["lucene"]["ranked"], depth=100)
        for name in raw
        if name.startswith("ours")
    }
    log("scoring with Lucene's rounded document lengths (ablation)")
    analyzer = EnglishAnalyzer()
    lengths_ablation = lucene_lengths.top1_agreement(
        [analyzer.analyze(data.contents(i)) for i in range(len(data.passage_ids))],
        data.passage_ids,
        {q.qid: analyzer.analyze(q.question) for q in data.questions},
        {qid: ranked[0] for qid, ranked in raw["lucene"]["ranked"].items() if ranked},
    )
    return agreement, lengths_ablation


def machine(load_before: tuple[float, float, float]) -> dict:
    """The machine, and its 1-minute load average at the start and end of the run."""
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        # 1-minute load average; above ~0.5 other work shared the cores during the run.
        "load_average_start": round(load_before[0], 2),
        "load_average_end": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    from benchmarks.bm25.bm25_report import render_markdown

    args = parse_args()
    module = ["python", "-m", "benchmarks.bm25.bm25_benchmark"]
    if args.from_json:
        render_from_json(args.out, shlex.join([*module, *sys.argv[1:]]))
        return
    load_before = os.getloadavg()
    work = args.work_dir or cache_dir() / "bm25_benchmark"
    (work / "results").mkdir(parents=True, exist_ok=True)
    log("loading the pool and the questions")
    data = bm25_data.load(args.data_dir or data_dir())
    log(f"{len(data.passage_ids)} passages, {len(data.questions)} questions")
    bm25_data.write_inputs(data, work / "full")
    small = bm25_data.subset(data, args.subset_passages, args.subset_questions, args.seed)
    bm25_data.write_inputs(small, work / "subset")
    raw, full, subset = run_engines(args, data, small, work)
    agreement, lengths_ablation = lucene_comparisons(raw, data)
    parity_stats = {}
    if not args.skip_lucene and not args.skip_parity:
        parity_stats = parity(data, args.pyserini_python, work, ["porter", *args.compare_stemmers])
    report = {
        "command": shlex.join([*module, *sys.argv[1:]]),
        "date": date.today().isoformat(),
        "environment": run_environment(),
        "machine": machine(load_before),
        "pool": {"passages": len(data.passage_ids), "questions": full["ours"]["questions"]},
        "cutoffs": list(CUTOFFS),
        "query_repeats": args.query_repeats,
        "full": full,
        "subset": subset,
        "subset_size": {"passages": len(small.passage_ids), "questions": len(small.questions), "seed": args.seed},
        "agreement_with_lucene": agreement,
        "length_rounding_ablation": lengths_ablation,
        "analyzer_parity": parity_stats,
        "skipped": {"lucene": args.skip_lucene, "inmemory": args.skip_inmemory},
    }
    out_md = args.out
    atomic_write_text(out_md.with_suffix(".json"), json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(out_md, render_markdown(report))
    log(f"wrote {out_md} and {out_md.with_suffix('.json')}")


if __name__ == "__main__":
    main()
