"""One indexing of the folder for ``benchmarks/files/folder_indexing.py``, in a fresh process so its peak
memory is its own. Prints one JSON line at the end (the libraries' output goes to standard error).

    python -m benchmarks.files.folder_worker --system ours --folder DIR --store STORE [--pipelines DIR]
    python -m benchmarks.files.folder_worker --system haystack --folder DIR --export ST_FOLDER [--pipelines DIR]

``ours``: the ``index_files`` pipeline file (packaged, or ``--pipelines``'s copy) over ``STORE``, its embedder
without the embedding cache and progress bar, run as ``haystack run index_files --input path=DIR --store
STORE`` runs it (``run_folder``: the folder listed and hashed, compared with the store, new and changed files
indexed a step at a time, the store's indexes saved). Run again on the same store, it finds every file
unchanged. ``haystack``: ``FileTypeRouter`` → Haystack's five converters → ``DocumentJoiner`` →
``DocumentCleaner`` → our ``DPRPassageSplitter`` → ``SentenceTransformersDocumentEmbedder`` (the exported
passage encoder) → ``DocumentWriter`` into ``InMemoryDocumentStore``, every shared setting read from the same
pipeline file, run once on the folder's files. ``load_seconds``: the pipeline built and warmed up (models
loaded); ``index_seconds``: the folder indexed."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.bm25.worker_common import peak_rss_mb
from benchmarks.files.mixed_folder import KINDS
from benchmarks.peers.native_systems import TITLE_FIELDS, pipeline_path

PIPELINE = "index_files"
NO_CACHE = ["embedder.cache_dir=null", "embedder.progress_bar=false"]
CONVERTED = ("text", "markdown", "html", "pdf", "docx")  # index_files' converters Haystack has (not jsonl/tsv)


def folder_files(folder: Path) -> list[Path]:
    """The folder's files of the kinds both systems index, in name order."""
    return sorted(path for path in folder.rglob("*") if path.is_file() and path.suffix in KINDS)


def index_ours(folder: Path, store: Path, pipelines: str | None) -> dict[str, Any]:
    """Our ``index_files`` into ``store`` (see the module docstring)."""
    start = time.perf_counter()
    from dpr_components.index_runs.folder_run import run_folder
    from dpr_components.pipeline_files.loading import load_pipeline
    from dpr_components.pipeline_requests.inputs import request_inputs

    pipeline = load_pipeline(pipeline_path(pipelines, PIPELINE), store=str(store), overrides=NO_CACHE,
                             require_stores=True)  # fmt: skip
    pipeline.warm_up()
    loaded = time.perf_counter()
    outcome = run_folder(pipeline, str(folder), request_inputs(pipeline, other={"path": str(folder)}))
    indexed = time.perf_counter()
    embedder: Any = pipeline.get_component("embedder")
    writer: Any = pipeline.get_component("writer")
    return {
        "files": len(folder_files(folder)),
        "files_indexed": len(outcome.indexed),
        "files_unchanged": len(outcome.unchanged),
        "files_skipped": len(outcome.skipped),
        "passages_written": outcome.documents_written,
        "passages": writer.document_store.count_documents(),
        "load_seconds": round(loaded - start, 3),
        "index_seconds": round(indexed - loaded, 3),
        "backend": str(embedder.encoder.backend),
    }


def _parameters(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return dict(spec["components"][name].get("init_parameters") or {})


def haystack_pipeline(pipelines: str | None, export: Path) -> tuple[Any, Any]:
    """Haystack's counterpart of ``index_files`` and its store: the converters, cleaner and splitter with the
    pipeline file's settings, the router with the file's MIME types of those converters."""
    from haystack import Pipeline
    from haystack.components.converters import (
        DOCXToDocument,
        HTMLToDocument,
        MarkdownToDocument,
        PyPDFToDocument,
        TextFileToDocument,
    )
    from haystack.components.joiners import DocumentJoiner
    from haystack.components.preprocessors import DocumentCleaner
    from haystack.components.routers import FileTypeRouter
    from haystack.components.writers import DocumentWriter
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersDocumentEmbedder

    from dpr_components.pipeline_files.loading import load_pipeline_spec
    from haystack_integrations.components.preprocessors.dpr.dpr_passage_splitter import DPRPassageSplitter

    converters = dict(zip(CONVERTED, (TextFileToDocument, MarkdownToDocument, HTMLToDocument, PyPDFToDocument,
                                      DOCXToDocument), strict=True))  # fmt: skip
    spec = load_pipeline_spec(pipeline_path(pipelines, PIPELINE))
    routes = {
        connection["sender"].split(".", 1)[1]: connection["receiver"].split(".", 1)[0]
        for connection in spec.get("connections") or []
        if connection["sender"].startswith("router.") and connection["receiver"].split(".", 1)[0] in converters
    }
    mime_types = [mime for mime in _parameters(spec, "router")["mime_types"] if mime in routes]
    store = InMemoryDocumentStore(embedding_similarity_function="dot_product")
    pipeline = Pipeline()
    pipeline.add_component("router", FileTypeRouter(mime_types=mime_types))
    pipeline.add_component("joiner", DocumentJoiner())
    for mime in mime_types:
        pipeline.add_component(routes[mime], converters[routes[mime]](**_parameters(spec, routes[mime])))
        pipeline.connect(f"router.{mime}", f"{routes[mime]}.sources")
        pipeline.connect(f"{routes[mime]}.documents", "joiner.documents")
    embedder = SentenceTransformersDocumentEmbedder(
        model=str(export), meta_fields_to_embed=TITLE_FIELDS, progress_bar=False,
        batch_size=_parameters(spec, "embedder").get("batch_size", 64),
    )  # fmt: skip
    pipeline.add_component("cleaner", DocumentCleaner(**_parameters(spec, "cleaner")))
    pipeline.add_component("splitter", DPRPassageSplitter(**_parameters(spec, "splitter")))
    pipeline.add_component("embedder", embedder)
    pipeline.add_component("writer", DocumentWriter(document_store=store))
    for sender, receiver in (("joiner", "cleaner"), ("cleaner", "splitter"), ("splitter", "embedder"),
                             ("embedder", "writer")):  # fmt: skip
        pipeline.connect(f"{sender}.documents", f"{receiver}.documents")
    return pipeline, store


def index_haystack(folder: Path, export: Path, pipelines: str | None) -> dict[str, Any]:
    """Haystack's pipeline on every file of the folder in one run, each file's name (without its extension)
    as its title, the meta field its embedder embeds (our pipeline reads titles from the files)."""
    start = time.perf_counter()
    pipeline, store = haystack_pipeline(pipelines, export)
    pipeline.warm_up()
    loaded = time.perf_counter()
    paths = folder_files(folder)
    result = pipeline.run({"router": {"sources": paths, "meta": [{"title": path.stem} for path in paths]}})
    indexed = time.perf_counter()
    stored = store.filter_documents()
    return {
        "files": len(paths),
        "files_indexed": len({document.meta.get("file_path") for document in stored}),
        "files_unchanged": 0,
        "files_skipped": sum(len(result.get("router", {}).get(key, [])) for key in ("unclassified", "failed")),
        "passages_written": result["writer"]["documents_written"],
        "passages": store.count_documents(),
        "load_seconds": round(loaded - start, 3),
        "index_seconds": round(indexed - loaded, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--system", choices=("ours", "haystack"), required=True)
    parser.add_argument("--folder", type=Path, required=True, help="the folder to index")
    parser.add_argument("--store", type=Path, help="ours: the store folder")
    parser.add_argument("--export", type=Path, help="haystack: the exported sentence-transformers passage encoder")
    parser.add_argument("--pipelines", help="folder holding index_files.yml (default: the packaged one)")
    args = parser.parse_args(argv)
    if (args.system == "ours" and args.store is None) or (args.system == "haystack" and args.export is None):
        parser.error("ours needs --store, haystack needs --export")
    from benchmarks.common import set_threads

    set_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    if args.system == "ours":
        result = index_ours(args.folder, args.store, args.pipelines)
    else:
        result = index_haystack(args.folder, args.export, args.pipelines)
    result["peak_mib"] = round(peak_rss_mb(), 1)  # the process's own high-water mark (VmHWM)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
