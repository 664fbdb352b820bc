"""One in-process BM25 engine for bm25_benchmark.py, run in its own process so its peak memory
is its own: ``ours`` (dpr_components' BM25Index) or ``inmemory`` (Haystack's InMemoryBM25Retriever).
Reads ``{"id", "contents"}`` passages and ``{"qid", "question"}`` questions; writes timings,
memory and ranked passage ids as JSON."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from worker_common import (
    peak_rss_mb,
    read_jsonl,
    rss_mb,
    time_queries,
    write_json_atomic,
)


def build_ours(ids: list[str], texts: list[str], args: argparse.Namespace) -> tuple[Callable[[str], list[str]], dict]:
    from dpr_components.document_stores.bm25_index import BM25Index

    index = BM25Index(k1=args.k1, b=args.b, stemmer=args.stemmer)
    index.build(texts)

    def search(query: str) -> list[str]:
        positions, _ = index.search(query, args.top_k)
        return [ids[p] for p in positions]

    return search, {**index.params, "bm25s": version("bm25s"), "PyStemmer": version("PyStemmer")}


def build_inmemory(
    ids: list[str], texts: list[str], args: argparse.Namespace
) -> tuple[Callable[[str], list[str]], dict]:
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    store.write_documents([Document(id=i, content=t) for i, t in zip(ids, texts, strict=True)])
    retriever = InMemoryBM25Retriever(document_store=store, top_k=args.top_k)

    def search(query: str) -> list[str]:
        return [document.id for document in retriever.run(query=query)["documents"]]

    settings = {
        "bm25_algorithm": store.bm25_algorithm,
        "bm25_parameters": "defaults",
        "haystack-ai": version("haystack-ai"),
    }
    return search, settings


ENGINES = {"ours": build_ours, "inmemory": build_inmemory}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", choices=sorted(ENGINES), required=True)
    parser.add_argument("--passages", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--top-k", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3, help="timed passes over the questions (median used)")
    parser.add_argument("--k1", type=float, default=0.9)
    parser.add_argument("--b", type=float, default=0.4)
    parser.add_argument("--stemmer", default="porter", help="PyStemmer algorithm for our analyzer")
    args = parser.parse_args()

    rows = list(read_jsonl(args.passages))
    ids, texts = [row["id"] for row in rows], [row["contents"] for row in rows]
    del rows
    questions = list(read_jsonl(args.questions))
    baseline = rss_mb()
    print(f"{args.engine}: indexing {len(texts)} passages", file=sys.stderr, flush=True)
    start = time.perf_counter()
    search, settings = ENGINES[args.engine](ids, texts, args)
    build_seconds = time.perf_counter() - start
    print(
        f"{args.engine}: indexed in {build_seconds:.1f}s; searching {len(questions)} questions",
        file=sys.stderr,
        flush=True,
    )
    ranked, pass_seconds = time_queries(questions, search, args.repeats)
    write_json_atomic(
        args.out,
        {
            "engine": args.engine,
            "settings": settings,
            "num_docs": len(texts),
            "build_seconds": build_seconds,
            "query_seconds": statistics.median(pass_seconds),
            "query_pass_seconds": pass_seconds,
            "queries": len(questions),
            "peak_rss_mb": peak_rss_mb(),
            "baseline_rss_mb": baseline,
            "ranked": ranked,
        },
    )


if __name__ == "__main__":
    main()
