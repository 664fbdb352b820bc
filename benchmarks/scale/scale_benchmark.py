"""Scaling of the embedded store (SQLite + BM25 + FAISS) from the pool's 55,350 passages to millions.

Corpus: the pool's real passages with their real (cached) vectors first; beyond them, synthetic
passages (the pool recombined, see ``benchmarks.bm25.bm25_incremental.synthetic_passages``) with
synthetic vectors drawn from a Gaussian fitted to the real ones (``benchmarks.vector_index.faiss_benchmark``).
Queries: NQ dev questions (BM25) and their vectors, encoded once by ``prep`` (dense).

Every measurement runs in a fresh child process with one thread (OMP/BLAS/FAISS); its peak
RSS comes from ``os.wait4``. Results are merged into ``docs/benchmarks/scale/scale.json`` after
each step, so a re-run skips what is done (``--redo STEP`` forces a step again).

Steps per size, in order: ``write`` (batched ``write_documents`` into a Flat store),
``build_bm25`` and ``build_flat`` (each index built from the table and saved), ``serve``
(open + first searches, checksum share, BM25 / dense / exact-hybrid queries/s), ``serve_plain``
(the same with the indexes read into the heap instead of memory-mapped), ``load_*``
(standalone loads of the saved files, plain vs memory-mapped), ``add`` (1,000 more passages:
write, catch-up, first searches, save); then, size by size, the other dense indexes
(``variant_ivfpq``, ``variant_hnsw``) unless their predicted build time passes ``--max-build-s``.

Run from the repository root:

    nice -n 5 python -m benchmarks.scale.scale_benchmark prep
    nice -n 5 python -m benchmarks.scale.scale_benchmark run --sizes 55350,250000,500000,1000000,2000000
    python -m benchmarks.scale.scale_report"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bm25.worker_common import write_json_atomic
from benchmarks.common import REPO_ROOT, log, set_threads, timed
from dpr_components.utils.settings import cache_dir, data_dir

RESULTS = REPO_ROOT / "docs" / "benchmarks" / "scale" / "scale.json"
POOL_SIZE = 55_350
ADDED = 1_000
WRITE_BATCH = 20_000
TOP_K = 100
HYBRID_CANDIDATES = 2_000
HYBRID_WEIGHT = 1.1
RECALL_QUERIES = 200
CORE_STEPS = (
    "write",
    "build_bm25",
    "build_flat",
    "serve",
    "serve_plain",
    "load_flat_plain",
    "load_flat_mmap",
    "load_bm25_plain",
    "load_bm25_mmap",
    "add",
)
VARIANT_STEPS = ("variant_ivfpq", "variant_hnsw")
SINGLE_THREAD = {
    name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")
}


def work_dir() -> Path:
    return cache_dir().resolve() / "scale"


def inputs_dir() -> Path:
    return work_dir() / "inputs"


def store_dir(size: int) -> Path:
    return work_dir() / str(size) / "store"


# -- corpus -----------------------------------------------------------------------------------


def ivfpq_factory(size: int) -> str:
    """IVF lists about 4·sqrt(N) (a power of two), capped at 1,024: FAISS trains the coarse
    quantiser on 256 vectors per list, so 4,096 lists at 2M would cost ~10 minutes of k-means on
    one core here; a 21M index would use ~16k lists trained once on a sample (docs/scale.md)."""
    nlist = 1 << max(8, min(10, int(np.log2(4 * np.sqrt(size)))))
    return f"IVF{nlist},PQ48"


def pool_vectors() -> np.ndarray:
    return np.load(inputs_dir() / "pool_vectors.npy")


def question_texts() -> list[str]:
    return json.loads((inputs_dir() / "questions.json").read_text(encoding="utf-8"))


def question_vectors() -> np.ndarray:
    return np.load(inputs_dir() / "question_vectors.npy")


def corpus_vectors(size: int) -> np.ndarray:
    """The vectors of the first ``size`` passages: the real pool's, then synthetic ones."""
    from benchmarks.vector_index.faiss_benchmark import synthetic_vectors

    real = pool_vectors()
    if size <= len(real):
        return real[:size]
    return np.concatenate([real, synthetic_vectors(real, size - len(real), seed=0)])


def corpus_texts(size: int) -> list[tuple[str, str]]:
    """(title, text) of the first ``size`` passages: the real pool's, then synthetic ones."""
    from benchmarks.bm25.bm25_incremental import synthetic_passages
    from dpr_components.evaluation.pool import pool_passages

    real = [(p.title, p.text) for p in pool_passages()]
    if size <= len(real):
        return real[:size]
    return real + synthetic_passages(size - len(real), seed=0)


def added_documents(count: int) -> list[Any]:
    """``count`` new passages (another recombination of the pool) with synthetic vectors."""
    from haystack import Document

    from benchmarks.bm25.bm25_incremental import synthetic_passages
    from benchmarks.vector_index.faiss_benchmark import synthetic_vectors

    texts = synthetic_passages(count, seed=1)
    vectors = synthetic_vectors(pool_vectors(), count, seed=1)
    return [
        Document(id=f"added-{i}", content=text, meta={"title": title}, embedding=vector.tolist())
        for i, ((title, text), vector) in enumerate(zip(texts, vectors, strict=True))
    ]


# -- measuring helpers ------------------------------------------------------------------------


def memory_mb() -> dict[str, float]:
    """This process's resident memory now: anonymous (heap) and file-backed (mapped files), MiB."""
    fields = {}
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            key = line.split(":")[0]
            if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                fields[key] = float(line.split()[1]) / 1024
    return {
        "rss_mb": fields["VmRSS"],
        "anon_mb": fields["RssAnon"],
        "file_mb": fields["RssFile"],
        "peak_mb": fields["VmHWM"],
    }


def rate(action: Callable[[Any], Any], items: Sequence[Any], budget_s: float, warmup: int = 3) -> dict[str, float]:
    """Calls per second of ``action`` over ``items`` (after ``warmup`` untimed calls), stopping
    once ``budget_s`` seconds have passed (at least 5 timed calls)."""
    for item in items[:warmup]:
        action(item)
    done, start = 0, time.perf_counter()
    for item in items:
        action(item)
        done += 1
        if done >= 5 and time.perf_counter() - start > budget_s:
            break
    seconds = time.perf_counter() - start
    return {"per_s": done / seconds, "calls": done, "seconds": seconds}


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def open_store(size: int, autosave: bool = True, memory_map: bool = True) -> Any:
    from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

    return EmbeddedDocumentStore(
        path=str(store_dir(size)),
        index_factory="Flat",
        bm25_title_field="title",
        autosave=autosave,
        memory_map=memory_map,
    )


# -- steps (each runs in its own child process) -------------------------------------------------


def step_prep() -> dict:
    """Real pool vectors (read from an existing embedding cache, never encoded here: that takes
    hours) and the NQ dev questions with their vectors (encoded once, seconds)."""
    from dpr_components.encoders.encoder_settings import EncoderSettings
    from dpr_components.encoders.text_encoder import TextEncoder
    from dpr_components.evaluation.pool import pool_passages

    encoder = TextEncoder(EncoderSettings(), batch_size=64)
    keys = [passage_key(p.title, p.text) for p in pool_passages()]
    vectors, source = cached_pool_vectors(keys, encoder.dim)
    with open(data_dir() / "nq" / "dev.jsonl", encoding="utf-8") as handle:
        texts = [json.loads(line)["question"] for line in handle]
    questions = encoder.encode_questions(texts)
    inputs_dir().mkdir(parents=True, exist_ok=True)
    np.save(inputs_dir() / "pool_vectors.npy", vectors)
    np.save(inputs_dir() / "question_vectors.npy", np.asarray(questions, dtype=np.float32))
    (inputs_dir() / "questions.json").write_text(json.dumps(texts), encoding="utf-8")
    return {"pool_vectors": len(vectors), "questions": len(texts), "dim": int(vectors.shape[1]), "vector_cache": source}


def passage_key(title: str, text: str) -> str:
    from dpr_components.encoders.embedding_cache import passage_key as key

    return key(title, text)


def cached_pool_vectors(keys: list[str], dim: int) -> tuple[np.ndarray, str]:
    """The pool's vectors from the embedding cache file holding all of them, opened read-only."""
    import sqlite3

    for path in sorted((cache_dir() / "embeddings").glob("*.sqlite")):
        found: dict[str, bytes] = {}
        with contextlib.closing(sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)) as db:
            for start in range(0, len(keys), 900):
                chunk = keys[start : start + 900]
                marks = ",".join("?" * len(chunk))
                found.update(db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk).fetchall())
        if len(found) == len(set(keys)) and all(len(v) == 4 * dim for v in found.values()):
            return np.stack([np.frombuffer(found[k], dtype=np.float32) for k in keys]), path.name
    raise SystemExit(f"no embedding cache in {cache_dir() / 'embeddings'} holds all {len(keys):,} pool vectors")


def step_write(size: int) -> dict:
    from haystack import Document

    folder = store_dir(size)
    if folder.exists():
        shutil.rmtree(folder)
    texts, vectors = corpus_texts(size), corpus_vectors(size)
    store = open_store(size, autosave=False)
    input_mb = memory_mb()["rss_mb"]
    start = time.perf_counter()
    for first in range(0, size, WRITE_BATCH):
        batch = [
            Document(id=f"p{i}", content=texts[i][1], meta={"title": texts[i][0]}, embedding=vectors[i].tolist())
            for i in range(first, min(size, first + WRITE_BATCH))
        ]
        store.write_documents(batch)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "per_s": size / seconds, "input_rss_mb": input_mb, "sqlite_mb": folder_mb(folder)}


def step_build(size: int, which: str) -> dict:
    store = open_store(size)
    backend = store._reader()
    before = memory_mb()
    seconds, _ = timed(backend.bm25 if which == "bm25" else backend.dense)
    after = memory_mb()
    folder = store_dir(size) / ("bm25_index" if which == "bm25" else "dense_index")
    return {"seconds": seconds, "disk_mb": folder_mb(folder), "rss_before_mb": before["rss_mb"], "rss_after": after}


def step_serve(size: int, budget_s: float, memory_map: bool = True) -> dict:
    """Opening, first searches, checksum share, and queries/s through the store (``serve_plain``:
    the same with ``memory_map=False``, indexes read into the heap)."""
    from dpr_components.document_stores.index_files import verified_state

    questions, vectors = question_texts(), question_vectors()
    out: dict[str, Any] = {}
    out["open_s"], store = timed(lambda: open_store(size, memory_map=memory_map))
    out["count_s"], count = timed(store.count_documents)
    out["first_bm25_s"], _ = timed(lambda: store.bm25_retrieval(questions[0], top_k=TOP_K))
    out["first_dense_s"], _ = timed(lambda: store.embedding_retrieval(vectors[0], top_k=TOP_K))
    out["memory_after_open"] = memory_mb()
    folder = store_dir(size)
    # As an opening checks them (files hashed on this machine before are not hashed again), and
    # fully re-hashed, as for a folder copied from elsewhere.
    out["verify_bm25_s"], _ = timed(lambda: verified_state(folder / "bm25_index"))
    out["verify_dense_s"], _ = timed(lambda: verified_state(folder / "dense_index"))
    out["rehash_bm25_s"], _ = timed(lambda: verified_state(folder / "bm25_index", rehash=True))
    out["rehash_dense_s"], _ = timed(lambda: verified_state(folder / "dense_index", rehash=True))
    backend = store._reader()
    out["dense_mapped"] = bool(backend.dense().is_mapped)
    bm25_index, _ = backend.bm25()
    dense_index = backend.dense()
    log(f"  opened {count:,} documents; timing queries")
    out["bm25_store"] = rate(lambda q: store.bm25_retrieval(q, top_k=TOP_K), questions, budget_s)
    out["bm25_index"] = rate(lambda q: bm25_index.search(q, TOP_K), questions, budget_s)
    out["dense_store"] = rate(lambda v: store.embedding_retrieval(v, top_k=TOP_K), vectors, budget_s)
    out["dense_index"] = rate(lambda v: dense_index.search(v, TOP_K), vectors, budget_s)
    out["dense_index_batch"] = _batch_rate(lambda vs: dense_index.search_many(vs, TOP_K), vectors, budget_s)
    pairs = list(zip(questions, vectors, strict=True))
    out["hybrid_single"] = rate(
        lambda p: store.hybrid_search(p[0], p[1], HYBRID_WEIGHT, top_k=TOP_K, candidates=HYBRID_CANDIDATES),
        pairs,
        budget_s,
        warmup=1,
    )
    out["hybrid_batch"] = _batch_rate(
        lambda chunk: store.hybrid_search_batch(
            [q for q, _ in chunk],
            np.stack([v for _, v in chunk]),
            HYBRID_WEIGHT,
            top_k=TOP_K,
            candidates=HYBRID_CANDIDATES,
        ),
        pairs,
        budget_s,
    )
    out["memory_after_queries"] = memory_mb()
    return out


def _batch_rate(
    action: Callable[[Any], Any], items: Sequence[Any], budget_s: float, batch: int = 32
) -> dict[str, float]:
    """Items per second when ``action`` gets ``batch`` items per call (one warm-up call)."""
    chunks = [items[i : i + batch] for i in range(0, len(items), batch)]
    action(chunks[0])
    done, start = 0, time.perf_counter()
    for chunk in chunks:
        action(chunk)
        done += len(chunk)
        if time.perf_counter() - start > budget_s:
            break
    seconds = time.perf_counter() - start
    return {"per_s": done / seconds, "calls": done, "seconds": seconds, "batch": batch}


def step_load_flat(size: int, mmap: bool, budget_s: float) -> dict:
    """The saved FAISS file read standalone, plainly or memory-mapped (``IO_FLAG_MMAP_IFC``)."""
    import faiss

    path = store_dir(size) / "dense_index" / "index.faiss"
    return _load_faiss(path, faiss.IO_FLAG_MMAP_IFC if mmap else 0, budget_s)


def _load_faiss(path: Path, flags: int, budget_s: float, **search_params: int) -> dict:
    """Read a saved FAISS file (``flags``: 0 or a memory-mapping flag), then time single searches
    with the benchmark's ``nprobe`` / ``ef_search`` set on the loaded index."""
    import faiss

    vectors = question_vectors()
    before = memory_mb()
    seconds, index = timed(lambda: faiss.read_index(str(path), flags))
    after = memory_mb()
    inner = faiss.downcast_index(faiss.downcast_index(index).index)
    if "nprobe" in search_params:
        faiss.extract_index_ivf(inner).nprobe = search_params["nprobe"]
    if "ef_search" in search_params:
        inner.hnsw.efSearch = search_params["ef_search"]
    search = rate(lambda v: index.search(v.reshape(1, -1), TOP_K), vectors, budget_s)
    return {**_loaded(seconds, before, after, search), "file_mb": path.stat().st_size / 2**20}


def _loaded(seconds: float, before: dict, after: dict, search: dict) -> dict:
    """A loading step's time, the memory it added (anonymous and file-backed) and its searches."""
    return {
        "load_s": seconds,
        "anon_added_mb": after["anon_mb"] - before["anon_mb"],
        "file_added_mb": after["file_mb"] - before["file_mb"],
        "search": search,
        "memory_after_search": memory_mb(),
    }


def step_load_bm25(size: int, mmap: bool, budget_s: float) -> dict:
    """The saved BM25 files read standalone (no checksum), with numpy arrays plain or memory-mapped."""
    from dpr_components.document_stores.bm25_index import BM25Index

    questions = question_texts()
    folder = store_dir(size) / "bm25_index"
    load = np.load
    before = memory_mb()
    if mmap:
        np.load = functools.partial(load, mmap_mode="r")  # only this child process; restored below
    try:
        seconds, index = timed(lambda: BM25Index.read_files(folder))
    finally:
        np.load = load
    after = memory_mb()
    search = rate(lambda q: index.search(q, TOP_K), questions, budget_s)
    return {
        **_loaded(seconds, before, after, search),
        "arrays_mb": sum(f.stat().st_size for f in folder.glob("*.npy")) / 2**20,
        "vocab_mb": sum(f.stat().st_size for f in folder.glob("vocab*")) / 2**20,
    }


def step_add(size: int) -> dict:
    """Adding passages to a saved store: write, catch-up of each index, first searches, save;
    then a second batch as large (the costs once the indexes are in memory)."""
    from haystack import Document

    questions, vectors = question_texts(), question_vectors()
    store = open_store(size)
    backend = store._reader()
    main_inode = (store_dir(size) / "dense_index" / "index.faiss").stat().st_ino  # a rewrite replaces the file
    out: dict[str, Any] = {}
    out["load_bm25_s"], _ = timed(lambda: store.bm25_retrieval(questions[0], top_k=TOP_K))
    out["load_dense_s"], _ = timed(lambda: store.embedding_retrieval(vectors[0], top_k=TOP_K))
    documents = added_documents(ADDED)
    out["write_s"], _ = timed(lambda: store.write_documents(documents))
    out["bm25_catch_up_s"], _ = timed(backend.bm25)
    out["first_bm25_search_s"], _ = timed(lambda: store.bm25_retrieval(questions[1], top_k=TOP_K))
    out["dense_catch_up_s"], _ = timed(backend.dense)
    # With autosave (the default) the first search after a write saves the caught-up FAISS index.
    out["first_dense_search_s"], _ = timed(lambda: store.embedding_retrieval(vectors[1], top_k=TOP_K))
    out["second_bm25_search_s"], _ = timed(lambda: store.bm25_retrieval(questions[2], top_k=TOP_K))
    out["second_dense_search_s"], _ = timed(lambda: store.embedding_retrieval(vectors[2], top_k=TOP_K))
    out["save_s"], _ = timed(store.save)
    out["memory_after_add"] = memory_mb()
    folder = store_dir(size)
    out["main_faiss_rewritten"] = (folder / "dense_index" / "index.faiss").stat().st_ino != main_inode
    out["dense_index_mb"] = folder_mb(folder / "dense_index")
    out["dense_delta_mb"] = folder_mb(folder / "dense_delta") if (folder / "dense_delta").is_dir() else 0.0
    # A second batch in the same process: the FAISS index is in memory (and writable) by now.
    more = [Document(id=f"more-{d.id}", content=d.content, meta=d.meta, embedding=d.embedding) for d in documents]
    out["second_write_s"], _ = timed(lambda: store.write_documents(more))
    out["second_dense_catch_up_s"], _ = timed(backend.dense)
    out["second_bm25_catch_up_s"], _ = timed(backend.bm25)
    out["second_save_s"], _ = timed(store.save)
    out["count"] = store.count_documents()
    return out


def step_variant(size: int, kind: str, budget_s: float) -> dict:
    """Another FAISS index over the same vectors, built standalone by the store's DenseIndex."""
    from dpr_components.document_stores.dense_index import DenseIndex

    factory, params = (ivfpq_factory(size), {"nprobe": 64}) if kind == "ivfpq" else ("HNSW32", {"ef_search": 128})
    vectors = corpus_vectors(size)
    queries = question_vectors()
    truth = _exact_top(size, vectors, queries[:RECALL_QUERIES])
    index = DenseIndex(vectors.shape[1], "dot_product", factory, **params)
    rowids = np.arange(1, size + 1, dtype=np.int64)
    before = memory_mb()
    seconds, _ = timed(functools.partial(index.rebuild, rowids, vectors))
    after_build = memory_mb()
    del vectors
    folder = work_dir() / str(size) / f"variant_{kind}"
    save_s, _ = timed(functools.partial(index.save, folder, 0))
    found = index.search_many(queries[:RECALL_QUERIES], TOP_K)
    recall = float(np.mean([len(np.intersect1d(f, t)) / TOP_K for f, t in zip(found, truth, strict=True)]))
    search = rate(functools.partial(index.search, top_k=TOP_K), queries, budget_s)
    del index
    out = {
        "factory": factory,
        **params,
        "build_s": seconds,
        "save_s": save_s,
        "disk_mb": folder_mb(folder),
        "recall_at_100": recall,
        "search": search,
        "rss_before_build_mb": before["rss_mb"],
        "rss_after_build_mb": after_build["rss_mb"],
    }
    for mode in ("plain", "mmap"):  # each in a fresh process: this one's heap would hide the load's
        out[f"load_{mode}"] = in_child(f"loadvariant_{kind}_{mode}", size, budget_s / 2)
    shutil.rmtree(folder)
    return out


def step_load_variant(size: int, kind: str, mmap: bool, budget_s: float) -> dict:
    """A saved variant index read standalone: IVF lists map with ``IO_FLAG_MMAP``, flat storage
    (HNSW's vectors) with ``IO_FLAG_MMAP_IFC``; the HNSW graph and IVF centroids stay in memory."""
    import faiss

    params = {"nprobe": 64} if kind == "ivfpq" else {"ef_search": 128}
    flag = 0 if not mmap else faiss.IO_FLAG_MMAP if kind == "ivfpq" else faiss.IO_FLAG_MMAP_IFC
    return _load_faiss(work_dir() / str(size) / f"variant_{kind}" / "index.faiss", flag, budget_s, **params)


def _exact_top(size: int, vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Exact top-100 rowids (1-based, as the store numbers rows) for ``queries``, cached per size."""
    import faiss

    path = work_dir() / str(size) / "exact_top100.npy"
    if path.is_file():
        return np.load(path)
    _, labels = faiss.knn(queries, vectors, TOP_K, metric=faiss.METRIC_INNER_PRODUCT)
    np.save(path, labels + 1)
    return labels + 1


def run_step(step: str, size: int, budget_s: float) -> dict:
    set_threads(1)
    if step == "prep":
        return step_prep()
    if step == "write":
        return step_write(size)
    if step in ("build_bm25", "build_flat"):
        return step_build(size, step.removeprefix("build_"))
    if step in ("serve", "serve_plain"):
        return step_serve(size, budget_s, memory_map=step == "serve")
    if step.startswith("load_flat_"):
        return step_load_flat(size, step.endswith("mmap"), budget_s)
    if step.startswith("load_bm25_"):
        return step_load_bm25(size, step.endswith("mmap"), budget_s)
    if step == "add":
        return step_add(size)
    if step.startswith("loadvariant_"):
        _, kind, mode = step.split("_")
        return step_load_variant(size, kind, mode == "mmap", budget_s)
    if step.startswith("variant_"):
        return step_variant(size, step.removeprefix("variant_"), budget_s)
    raise SystemExit(f"unknown step {step!r}")


# -- orchestration ----------------------------------------------------------------------------


def load_results() -> dict:
    return json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else {"sizes": {}}


def in_child(step: str, size: int, budget_s: float, code_root: Path = REPO_ROOT) -> dict:
    """Run one step in a fresh single-threaded process (with the code in ``code_root``: another
    checkout measures another version of the store); its result plus peak RSS and wall time."""
    with tempfile.TemporaryDirectory(prefix="scale-") as tmp:
        out = Path(tmp) / "result.json"
        # A checkout from before the benchmarks were grouped by subject has the module at the top.
        module = (
            "benchmarks.scale.scale_benchmark"
            if (code_root / "benchmarks" / "scale").is_dir()
            else "benchmarks.scale_benchmark"
        )
        command = [sys.executable, "-m", module, "worker", step, str(size), str(out), str(budget_s)]
        start = time.perf_counter()
        # The data folders resolved here, so a checkout elsewhere reads the same inputs and stores.
        env = {
            **os.environ,
            **SINGLE_THREAD,
            "DPR_CACHE_DIR": str(cache_dir().resolve()),
            "DPR_DATA_DIR": str(data_dir().resolve()),
        }
        child = subprocess.Popen(command, cwd=code_root, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        if child.returncode != 0 or not out.is_file():
            raise RuntimeError(f"step {step} at {size:,} failed with exit code {child.returncode}")
        result = json.loads(out.read_text(encoding="utf-8"))
    return {
        **result,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "wall_s": wall,
        "load_average": os.getloadavg()[0],
        "store_code": store_code_digest(code_root),
    }


def store_code_digest(code_root: Path = REPO_ROOT) -> str:
    """A digest of the store's source files, to tell apart measurements of different code."""
    import hashlib

    digest = hashlib.blake2b(digest_size=6)
    for path in sorted((code_root / "dpr_components" / "document_stores").glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def planned(results: dict, sizes: list[int], steps: Sequence[str]) -> Iterator[tuple[str, int]]:
    """(step, size) pairs not yet recorded, size by size (lazily: skips depend on earlier results)."""
    for size in sizes:
        for step in steps:
            if step not in results["sizes"].get(str(size), {}):
                yield step, size


def predicted_build_s(results: dict, step: str, size: int) -> float | None:
    """Build time at ``size`` extrapolated from the largest size below: linear, N^1.3 for HNSW
    (its build slows as the graph outgrows the CPU caches: docs/benchmarks/vector_index/faiss.md)."""
    measured = [
        (int(n), steps[step]["build_s"])
        for n, steps in results["sizes"].items()
        if int(n) < size and "build_s" in steps.get(step, {})
    ]
    if not measured:
        return None
    n, seconds = max(measured)
    return seconds * (size / n) ** (1.3 if step == "variant_hnsw" else 1.0)


def run(
    sizes: list[int],
    steps: Sequence[str],
    budget_s: float,
    max_build_s: float,
    redo: set[str],
    keep_before: bool = False,
    before_key: str = "before",
    code_root: Path = REPO_ROOT,
) -> None:
    """Measure what ``results`` lacks; ``redo`` steps again (with ``keep_before``, their previous
    results move to ``results[before_key]``, unless it holds that step already: to compare code
    versions). ``code_root``: the checkout whose code is measured."""
    results = load_results()
    results["machine"] = f"{platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}"
    results["settings"] = {
        "top_k": TOP_K,
        "hybrid_candidates": HYBRID_CANDIDATES,
        "added": ADDED,
        "write_batch": WRITE_BATCH,
        "query_budget_s": budget_s,
        "recall_queries": RECALL_QUERIES,
        "threads": 1,
    }
    for size in sizes:
        entry = results["sizes"].setdefault(str(size), {})
        for step in redo:
            previous = entry.pop(step, None)
            if keep_before and previous is not None:
                results.setdefault(before_key, {}).setdefault(str(size), {}).setdefault(step, previous)
    for order in (CORE_STEPS, VARIANT_STEPS):
        chosen = [s for s in order if s in steps]
        for step, size in planned(results, sizes, chosen):
            if step.startswith("variant_") and (skip := _skip_reason(results, step, size, max_build_s)):
                results["sizes"][str(size)][step] = {"skipped": skip}
                write_json_atomic(RESULTS, results)
                log(f"{step} at {size:,}: skipped ({skip})")
                continue
            log(f"{step} at {size:,}")
            try:
                outcome = in_child(step, size, budget_s, code_root)
            except RuntimeError as error:
                log(f"  {error}")
                outcome = {"failed": str(error)}
            results["sizes"][str(size)][step] = outcome
            write_json_atomic(RESULTS, results)
            log(f"  done in {outcome.get('wall_s', 0):.1f} s, peak RSS {outcome.get('peak_rss_mb', 0):,.0f} MiB")


def _skip_reason(results: dict, step: str, size: int, max_build_s: float) -> str | None:
    predicted = predicted_build_s(results, step, size)
    if predicted is not None and predicted > max_build_s:
        return f"predicted build {predicted:.0f} s > --max-build-s {max_build_s:.0f}"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("prep", help="cache pool vectors and NQ dev question vectors")
    runner = commands.add_parser("run", help="measure every size (resumable)")
    runner.add_argument("--sizes", default="55350,250000,500000,1000000,2000000")
    runner.add_argument("--steps", default=",".join(CORE_STEPS + VARIANT_STEPS))
    runner.add_argument("--redo", default="", help="steps to measure again even if recorded")
    runner.add_argument("--keep-before", action="store_true", help="keep the redone steps' results under --before-key")
    runner.add_argument("--before-key", default="before", help="where --keep-before keeps them (default 'before')")
    runner.add_argument(
        "--code",
        type=Path,
        default=REPO_ROOT,
        help="measure the code of this checkout (e.g. a worktree of an older commit)",
    )
    runner.add_argument("--query-budget-s", type=float, default=15.0, help="seconds per queries/s measurement")
    runner.add_argument(
        "--max-build-s", type=float, default=600.0, help="skip an extra dense index predicted to build longer"
    )
    worker = commands.add_parser("worker", help=argparse.SUPPRESS)
    worker.add_argument("step")
    worker.add_argument("size", type=int)
    worker.add_argument("out", type=Path)
    worker.add_argument("budget_s", type=float)
    args = parser.parse_args()
    if args.command == "prep":
        log(json.dumps(in_child("prep", 0, 0)))
    elif args.command == "run":
        if not (inputs_dir() / "question_vectors.npy").is_file():
            raise SystemExit("inputs missing: run `python -m benchmarks.scale.scale_benchmark prep` first")
        sizes = [int(s) for s in args.sizes.split(",")]
        steps = [s for s in args.steps.split(",") if s]
        unknown = set(steps) - set(CORE_STEPS + VARIANT_STEPS)
        if unknown:
            raise SystemExit(f"--steps: unknown {sorted(unknown)}; choose from {CORE_STEPS + VARIANT_STEPS}")
        redo = {s for s in args.redo.split(",") if s}
        run(
            sizes,
            steps,
            args.query_budget_s,
            args.max_build_s,
            redo,
            args.keep_before,
            args.before_key,
            args.code.resolve(),
        )
    else:
        result = run_step(args.step, args.size, args.budget_s)
        # The child's own high-water mark: ru_maxrss also counts what it inherited when forked.
        result["vm_hwm_mb"] = memory_mb()["peak_mb"]
        args.out.write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main()
