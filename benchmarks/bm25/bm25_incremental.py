"""Benchmark incremental BM25 writes: adding passages to a large index costs time in proportion
to the passages added, not to the index.

The corpus is synthetic: the pool's DPR passages recombined (title and first half of one
passage, second half of another) into as many distinct passages as asked. Two phases, each in
its own run so each stays under ~10 minutes on 2 cores:

- ``index``: BM25Index.build over N passages, queries/s, ``add`` of K more, queries/s again;
- ``store``: an EmbeddedDocumentStore holding N passages (BM25 built by ``save()``: what every
  first search after a write cost before the index took writes), then ``write_documents`` of K
  more and the first BM25 search, a second search, and ``save()``.

Run from the repository root (each phase merges its results into the JSON and rewrites the report):

    nice -n 10 python -m benchmarks.bm25.bm25_incremental --phase index --passages 1000000
    nice -n 10 python -m benchmarks.bm25.bm25_incremental --phase store --passages 1000000"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import REPO_ROOT, log, timed
from dpr_components.evaluation.pool import pool_passages
from dpr_components.evaluation.tables import table_header
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.settings import data_dir

OUT = REPO_ROOT / "docs" / "benchmarks" / "bm25" / "bm25_incremental.md"


def synthetic_passages(count: int, seed: int = 0) -> list[tuple[str, str]]:
    """``count`` distinct (title, text) pairs: passage ``a``'s title and first half, then the second
    half of passage ``b``; the pairs (a, b) never repeat."""
    pool = pool_passages()
    words = [p.text.split() for p in pool]
    size = len(pool)
    order = list(range(size))
    random.Random(seed).shuffle(order)
    out = []
    for i in range(count):
        a = order[i % size]
        b = order[(i % size + 1 + (i // size) * 997) % size]  # a differs per round: (a, b) is unique
        first, second = words[a], words[b]
        text = " ".join(first[: len(first) // 2] + second[len(second) // 2 :])
        out.append((pool[a].title, text))
    return out


def questions(limit: int) -> list[str]:
    with open(data_dir() / "nq" / "dev.jsonl", encoding="utf-8") as handle:
        return [json.loads(line)["question"] for line, _ in zip(handle, range(limit), strict=False)]


def queries_per_second(search: Callable[[str], object], queries: list[str]) -> float:
    for query in queries[:20]:
        search(query)
    seconds, _ = timed(lambda: [search(q) for q in queries])
    return len(queries) / seconds


def index_phase(n: int, k: int, queries: list[str]) -> dict:
    from dpr_components.document_stores.bm25_index import BM25Index

    log(f"making {n + k:,} synthetic passages")
    passages = [f"{title}\n{text}" for title, text in synthetic_passages(n + k)]
    index = BM25Index()
    log(f"building over {n:,}")
    build, _ = timed(lambda: index.build(passages[:n]))
    search = lambda q: index.search(q, 100)  # noqa: E731
    before = queries_per_second(search, queries)
    log(f"built in {build:.1f} s, {before:.0f} queries/s; adding {k:,}")
    add, _ = timed(lambda: index.add(passages[n:]))
    first_query, _ = timed(lambda: index.search(queries[0], 100))
    after = queries_per_second(search, queries)
    log(f"added in {add:.2f} s, {after:.0f} queries/s")
    merge, _ = timed(index.merge)
    merged = queries_per_second(search, queries)
    log(f"merged in {merge:.1f} s; rebuilding over all {n + k:,} from scratch to compare")
    scratch = BM25Index()
    rebuild, _ = timed(lambda: scratch.build(passages))
    same = sum(_same_results(index.search(q, 100), scratch.search(q, 100)) for q in queries)
    log(f"rebuilt in {rebuild:.1f} s; {same}/{len(queries)} queries rank identically")
    return {
        "build_s": build,
        "add_s": add,
        "first_query_after_add_s": first_query,
        "merge_s": merge,
        "rebuild_s": rebuild,
        "identical_rankings": same,
        "qps_before": before,
        "qps_after_add": after,
        "qps_after_merge": merged,
    }


def _same_results(a: tuple, b: tuple) -> bool:
    import numpy as np

    return bool(np.array_equal(a[0], b[0]) and np.allclose(a[1], b[1], rtol=1e-5))


def store_phase(n: int, k: int, queries: list[str], work: Path) -> dict:
    from haystack import Document

    from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

    passages = synthetic_passages(n + k)
    docs = [Document(id=f"p{i}", content=text, meta={"title": title}) for i, (title, text) in enumerate(passages)]
    folder = work / "store"
    store = EmbeddedDocumentStore(path=str(folder), bm25_title_field="title")
    log(f"writing {n:,} passages to SQLite")
    write_n, _ = timed(lambda: [store.write_documents(docs[i : i + 50_000]) for i in range(0, n, 50_000)])
    log(f"written in {write_n:.1f} s; building and saving BM25 (the old cost of a first search after a write)")
    rebuild, _ = timed(store.save)
    search = lambda q: store.bm25_retrieval(q, top_k=100)  # noqa: E731
    before = queries_per_second(search, queries)
    log(f"built and saved in {rebuild:.1f} s, {before:.0f} queries/s; writing {k:,} more")
    write_k, _ = timed(lambda: store.write_documents(docs[n:]))
    first, _ = timed(lambda: search(queries[0]))
    second, _ = timed(lambda: search(queries[1]))
    after = queries_per_second(search, queries)
    log(f"write {write_k:.2f} s, first search {first:.2f} s, {after:.0f} queries/s; saving")
    save, _ = timed(store.save)
    return {
        "write_n_s": write_n,
        "rebuild_and_save_s": rebuild,
        "write_k_s": write_k,
        "first_search_s": first,
        "second_search_s": second,
        "save_after_s": save,
        "qps_before": before,
        "qps_after_add": after,
    }


def report(results: dict) -> str:
    lines = [
        "# Incremental BM25 writes",
        "",
        f"Made by `{results.get('command', 'python -m benchmarks.bm25.bm25_incremental')}` "
        f"({results.get('machine', '')}; `nice -n 10`, single-threaded numpy).",
        "",
        "Synthetic corpus: the pool's 55,350 DPR passages recombined (title and first half of one, second",
        "half of another) into distinct passages; queries: NQ dev questions, top 100. BM25Index keeps raw",
        "term frequencies; N, document frequencies and the average length are computed per query, so an",
        "index written to piecewise scores exactly like one built from scratch (tests/document_stores/test_bm25_incremental.py).",
        "",
    ]
    index = results.get("index")
    if index:
        lines += [
            f"## Index only: {index['passages']:,} passages, then {index['added']:,} more",
            "",
            *table_header(["step", "time (s)", "queries/s after"], "lrr"),
            f"| build (= full rebuild, the old cost of any write) | {index['build_s']:.1f} | {index['qps_before']:.0f} |",
            f"| add {index['added']:,} (new segment) | {index['add_s']:.2f} | {index['qps_after_add']:.0f} |",
            f"| first query after the add | {index['first_query_after_add_s']:.3f} | |",
            f"| merge into one segment (at saving, or past {index['merge_fraction']:.0%} new) | {index['merge_s']:.1f} | "
            f"{index['qps_after_merge']:.0f} |",
            f"| rebuild over all {index['passages'] + index['added']:,} from scratch (for comparison) | {index['rebuild_s']:.1f} | |",
            "",
            f"Top-100 results after the add equal those of the rebuilt index (positions and scores, rtol 1e-5) for "
            f"{index['identical_rankings']} of {index['queries']} queries.",
            "",
        ]
    store = results.get("store")
    if store:
        lines += [
            f"## Through the store: {store['passages']:,} passages, then `write_documents` of {store['added']:,} more",
            "",
            *table_header(["step", "time (s)"], "lr"),
            f"| write {store['passages']:,} passages to SQLite (batches of 50,000) | {store['write_n_s']:.1f} |",
            f"| build and save BM25 from the table (before: every first search after a write) | {store['rebuild_and_save_s']:.1f} |",
            f"| `write_documents` of {store['added']:,} | {store['write_k_s']:.2f} |",
            f"| first BM25 search after it (catch-up from the change log + query) | {store['first_search_s']:.2f} |",
            f"| second search | {store['second_search_s']:.3f} |",
            f"| `save()` afterwards (merge, write, checksum) | {store['save_after_s']:.1f} |",
            "",
            f"BM25 queries/s through the store: {store['qps_before']:.0f} before the write, {store['qps_after_add']:.0f} after it.",
            "The first search does not save the caught-up index: a copy less than 1% behind is caught up",
            "again by the next opener; `save()`, exit and larger catch-ups write it.",
            "",
        ]
    extra = results.get("notes")
    if extra:
        lines += ["## Notes", "", *extra, ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phase", choices=("index", "store"), required=True)
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--add", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    from dpr_components.document_stores import bm25_index

    queries = questions(args.queries)
    json_path = args.out.with_suffix(".json")
    results = json.loads(json_path.read_text(encoding="utf-8")) if json_path.is_file() else {}
    results["machine"] = f"{platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}"
    results["command"] = (
        "nice -n 10 python -m benchmarks.bm25.bm25_incremental --phase index|store " + f"--passages {args.passages}"
    )
    settings = {
        "passages": args.passages,
        "added": args.add,
        "queries": len(queries),
        "merge_fraction": bm25_index.MERGE_FRACTION,
    }
    if args.phase == "index":
        results["index"] = {**settings, **index_phase(args.passages, args.add, queries)}
    else:
        work = Path(tempfile.mkdtemp(prefix="bm25-incremental-"))
        try:
            results["store"] = {**settings, **store_phase(args.passages, args.add, queries, work)}
        finally:
            shutil.rmtree(work, ignore_errors=True)
    atomic_write_text(json_path, json.dumps(results, indent=2) + "\n")
    atomic_write_text(args.out, report(results))
    log(f"wrote {args.out} and {json_path}")


if __name__ == "__main__":
    main()
