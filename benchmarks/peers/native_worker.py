"""One measurement of ``benchmarks/peers/haystack_native.py`` in a fresh process: its peak memory is its
own, and a cold start starts from nothing. Prints one JSON line at the end (the libraries' output goes to
standard error).

    python -m benchmarks.peers.native_worker index --system ours --run RUN.json --passages P.jsonl --out STORE
    python -m benchmarks.peers.native_worker cold --system qa --run RUN.json --question "who wrote hamlet"

``index``: the passages embedded and written into a new store (ours: our ``index`` pipeline's embedder and
``PassageWriter`` into ``EmbeddedDocumentStore``, then ``save()``; Haystack: the document embedder and
``DocumentWriter`` into ``InMemoryDocumentStore``, then ``save_to_disk``), timed after the models are
loaded. ``cold``: the pipeline loaded and the question answered once; reports the wall-clock time of the
first answer (the parent subtracts the time it started the process) and the resident memory then."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from haystack import Document

from benchmarks.bm25.worker_common import peak_rss_mb, rss_mb
from benchmarks.peers.native_systems import (
    RunFiles,
    haystack_indexing,
    haystack_qa,
    haystack_qa_inputs,
    load_haystack_store,
    new_haystack_store,
    our_indexing,
    pipeline_path,
)

SYSTEMS = {"index": ("ours", "haystack"), "cold": ("qa", "haystack_qa")}


def folder_bytes(path: Path) -> int:
    """Bytes of the file ``path``, or of every file under the folder ``path``."""
    if path.is_file():
        return path.stat().st_size
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def read_passages(path: Path) -> list[Document]:
    """The passages written by the parent (``{"id", "content", "meta"}`` per line)."""
    with open(path, encoding="utf-8") as lines:
        return [Document(**json.loads(line)) for line in lines]


def index(system: str, files: RunFiles, passages: Path, out: Path) -> dict[str, Any]:
    """Index ``passages`` with ``system`` into ``out``: seconds to embed and write, to save, and the bytes on disk."""
    documents = read_passages(passages)
    if system == "ours":
        pipeline, store = our_indexing(files.pipelines, out)
        save = store.save
    else:
        store = new_haystack_store()
        pipeline = haystack_indexing(files.exports, store, files.st_backend)

        def save() -> None:
            store.save_to_disk(str(out))

    pipeline.warm_up()
    start = time.perf_counter()
    pipeline.run({"embedder": {"documents": documents}})
    written = time.perf_counter()
    save()
    saved = time.perf_counter()
    return {
        "passages": len(documents),
        "stored": store.count_documents(),
        "write_seconds": round(written - start, 3),
        "save_seconds": round(saved - written, 3),
        "disk_bytes": folder_bytes(out),
    }


def cold(system: str, files: RunFiles, question: str) -> dict[str, Any]:
    """Load ``system`` (ours: the ``qa`` file over our store; Haystack's: its store read back from disk and its
    pipeline built) and answer ``question`` once: when the answer came and the memory then."""
    if system == "qa":
        from benchmarks.reader.qa_pipelines import answer_component
        from dpr_components.pipeline_files.loading import load_pipeline
        from dpr_components.pipeline_requests.inputs import request_inputs
        from dpr_components.pipeline_requests.running import run_pipeline

        pipeline = load_pipeline(pipeline_path(files.pipelines, "qa"), store=files.store, require_stores=True)
        answers = run_pipeline(pipeline, request_inputs(pipeline, query=question))[answer_component(pipeline)][
            "answers"
        ]
    else:
        pipeline = haystack_qa(files, load_haystack_store(files.haystack_store), fast=False, fusion=files.fusion)
        answers = pipeline.run(haystack_qa_inputs(pipeline, question))["reader"]["answers"]
    return {"answered_at": time.time(), "rss_mib": round(rss_mb(), 1), "answers": len(answers)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", choices=sorted(SYSTEMS))
    parser.add_argument("--system", required=True)
    parser.add_argument("--run", type=Path, required=True, help="the run's settings (written by the parent)")
    parser.add_argument("--passages", type=Path, help="index: the passages")
    parser.add_argument("--out", type=Path, help="index: the store to write")
    parser.add_argument("--question", help="cold: the question to answer")
    args = parser.parse_args(argv)
    if args.system not in SYSTEMS[args.task]:
        parser.error(f"{args.task} --system is one of {SYSTEMS[args.task]}")
    from benchmarks.common import set_threads

    set_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    files = RunFiles.read(args.run)
    if args.task == "index":
        result = index(args.system, files, args.passages, args.out)
    else:
        result = cold(args.system, files, args.question)
    # the process's own high-water mark (VmHWM; the ru_maxrss a parent sees starts from the parent's size)
    result["peak_mib"] = round(peak_rss_mb(), 1)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
