"""Lucene BM25 through Pyserini, run with the Python of ``.venv-pyserini`` (see setup_pyserini.sh).

``run``: index a JsonCollection folder (``{"id", "contents"}`` lines) with Pyserini's default
English analyzer and search every question; writes timings, memory and ranked ids as JSON.
``analyze``: write Lucene's analysis of each line of a JSONL file (``{"id", "text"}``)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from worker_common import (
    children_peak_rss_mb,
    peak_rss_mb,
    read_jsonl,
    rss_mb,
    time_queries,
    write_json_atomic,
)


def build_index(collection: Path, index: Path) -> float:
    """Index ``collection`` into ``index`` in a child process (one thread); return wall seconds."""
    if index.exists():
        shutil.rmtree(index)
    command = [
        sys.executable, "-m", "pyserini.index.lucene",
        "--collection", "JsonCollection",
        "--generator", "DefaultLuceneDocumentGenerator",
        "--input", str(collection),
        "--index", str(index),
        "--threads", "1",
        "--storeRaw",
    ]  # fmt: skip
    start = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if completed.returncode != 0:
        raise RuntimeError(f"Lucene indexing failed ({completed.returncode}):\n{completed.stderr[-4000:]}")
    return seconds


def run(args: argparse.Namespace) -> None:
    from pyserini.search.lucene import LuceneSearcher

    questions = list(read_jsonl(args.questions))
    print(f"lucene: indexing {args.collection}", file=sys.stderr, flush=True)
    build_seconds = build_index(args.collection, args.index)
    rss_before_search = rss_mb()
    searcher = LuceneSearcher(str(args.index))
    searcher.set_bm25(args.k1, args.b)
    num_docs = searcher.num_docs
    top_k = args.top_k

    def search(query: str) -> list[str]:
        return [hit.docid for hit in searcher.search(query, k=top_k)]

    print(f"lucene: searching {len(questions)} questions over {num_docs} passages", file=sys.stderr, flush=True)
    ranked, pass_seconds = time_queries(questions, search, args.repeats)
    write_json_atomic(
        args.out,
        {
            "engine": "lucene",
            "settings": {"k1": args.k1, "b": args.b, "analyzer": "Pyserini default (Lucene English, Porter)"},
            "versions": _versions(),
            "num_docs": num_docs,
            "build_seconds": build_seconds,
            "query_seconds": statistics.median(pass_seconds),
            "query_pass_seconds": pass_seconds,
            "queries": len(questions),
            # Indexing runs in a child JVM, searching in this one: the engine's peak is the larger.
            "peak_rss_mb": max(children_peak_rss_mb(), peak_rss_mb()),
            "index_peak_rss_mb": children_peak_rss_mb(),
            "search_peak_rss_mb": peak_rss_mb(),
            "baseline_rss_mb": rss_before_search,
            "ranked": ranked,
        },
    )


def analyze(args: argparse.Namespace) -> None:
    from pyserini.analysis import Analyzer, get_lucene_analyzer

    analyzer = Analyzer(get_lucene_analyzer())
    with open(args.out, "w", encoding="utf-8") as out:
        for row in read_jsonl(args.texts):
            out.write(json.dumps({"id": row["id"], "terms": list(analyzer.analyze(row["text"]))}) + "\n")


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {"pyserini": version("pyserini"), "java_home": os.path.basename(os.environ.get("JAVA_HOME", ""))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run")
    run_parser.add_argument("--collection", type=Path, required=True, help="folder of JsonCollection files")
    run_parser.add_argument("--index", type=Path, required=True, help="Lucene index folder to (re)create")
    run_parser.add_argument("--questions", type=Path, required=True, help='JSONL of {"qid", "question"}')
    run_parser.add_argument("--out", type=Path, required=True)
    run_parser.add_argument("--top-k", type=int, default=100)
    run_parser.add_argument("--repeats", type=int, default=3, help="timed passes over the questions (median used)")
    run_parser.add_argument("--k1", type=float, default=0.9)
    run_parser.add_argument("--b", type=float, default=0.4)
    analyze_parser = commands.add_parser("analyze")
    analyze_parser.add_argument("--texts", type=Path, required=True, help='JSONL of {"id", "text"}')
    analyze_parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    {"run": run, "analyze": analyze}[args.command](args)


if __name__ == "__main__":
    main()
