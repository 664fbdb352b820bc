"""Folder indexing: our packaged ``index_files`` pipeline against the pipeline a Haystack user composes from
Haystack's own converters, with the same splitter, cleaner settings and weights, writing to
``InMemoryDocumentStore``: files/s and passages/s on a folder of mixed files (``mixed_folder.py``: ``.txt
.md .html .pdf .docx`` in equal shares, made from the Wikipedia pool of ``$DPR_DATA_DIR``).

Each system indexes the folder in a fresh process (``folder_worker.py``), the two taking turns (the order
turning each repeat); ours then indexes the same folder again into the same store, every file unchanged.
Our passage encoder is exported as a sentence-transformers folder for Haystack's embedder. Writes
docs/benchmarks/files/folder_indexing.{md,json}; ``--from-json`` renders the page again from its JSON.

    python -m benchmarks.files.folder_indexing --files 500 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import REPO_ROOT, cpu_name, installed_versions, log, report_main
from benchmarks.files.folder_worker import PIPELINE
from benchmarks.files.mixed_folder import write_mixed_folder
from benchmarks.peers.haystack_native import rotated
from benchmarks.peers.haystack_native import run_worker as run_fresh_worker
from benchmarks.peers.native_systems import pipeline_path
from dpr_components.evaluation.tables import markdown_table
from dpr_components.utils.settings import cache_dir, data_dir

MODULE = "benchmarks.files.folder_indexing"
TITLE = "Folder indexing: index_files against Haystack's converters"
SYSTEMS = ("ours", "haystack")
VERSIONS = ("haystack-ai", "sentence-transformers-haystack", "sentence-transformers", "torch")
ROWS = {
    "ours": "ours (`index_files`)",
    "ours_unchanged": "ours, the same folder again (every file unchanged)",
    "haystack": "Haystack's converters",
}


def pool_path() -> Path:
    """The Wikipedia pool: ``$DPR_DATA_DIR/wiki/documents.jsonl``."""
    return data_dir() / "wiki" / "documents.jsonl"


def run_worker(arguments: list[str], log_file: Path, threads: int) -> dict[str, Any]:
    """``folder_worker ARGUMENTS`` in a fresh process on ``threads`` threads: its JSON line."""
    return run_fresh_worker(arguments, log_file, threads, module="benchmarks.files.folder_worker")[0]


def shared_settings(pipelines: str | None) -> dict[str, Any]:
    """What both sides take from our pipeline file: the passage encoder, the splitter's and cleaner's settings."""
    from dpr_components.pipeline_files.loading import load_pipeline_spec

    components = load_pipeline_spec(pipeline_path(pipelines, PIPELINE))["components"]
    embedder = components["embedder"].get("init_parameters") or {}
    return {
        "passage_encoder": embedder["model"],
        "max_length": embedder.get("max_length"),
        "batch_size": embedder.get("batch_size", 64),
        "splitter": components["splitter"].get("init_parameters") or {},
        "cleaner": components["cleaner"].get("init_parameters") or {},
    }


def measure_runs(work: Path, folder: Path, export: Path, args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    """Each system indexing ``folder`` ``args.repeats`` times, taking turns; after each of ours, ours again on
    its store. The workers' logs are kept in the cache folder."""
    logs = cache_dir() / "folder_indexing-logs"
    logs.mkdir(parents=True, exist_ok=True)
    pipelines = ["--pipelines", args.pipelines] if args.pipelines else []
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in ROWS}
    for repeat in range(args.repeats):
        for system in rotated(SYSTEMS, repeat):
            log(f"{system} indexes the folder ({repeat + 1}/{args.repeats})")
            if system == "haystack":
                arguments = ["--system", system, "--folder", str(folder), "--export", str(export), *pipelines]
                runs[system].append(run_worker(arguments, logs / "haystack.log", args.threads))
                continue
            store = work / "store"
            shutil.rmtree(store, ignore_errors=True)
            arguments = ["--system", system, "--folder", str(folder), "--store", str(store), *pipelines]
            runs[system].append(run_worker(arguments, logs / "ours.log", args.threads))
            log(f"ours indexes the same folder again ({repeat + 1}/{args.repeats})")
            runs["ours_unchanged"].append(run_worker(arguments, logs / "ours-unchanged.log", args.threads))
    return runs


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The whole run (see the module docstring); the summary without its command."""
    corpus = args.corpus or pool_path()
    if not corpus.is_file():
        raise SystemExit(f"the passage pool {corpus} is missing: set DPR_DATA_DIR to the shared data folder")
    settings = shared_settings(args.pipelines)
    cache_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="folder-indexing-", dir=cache_dir()) as temporary:
        work = Path(temporary)
        log(f"writing {args.files} files from {corpus}")
        folder = write_mixed_folder(work / "folder", corpus, args.files, args.paragraphs)
        log(f"exporting {settings['passage_encoder']} for Haystack's embedder")
        from dpr_components.export.sentence_transformers import export_sentence_transformers

        export = export_sentence_transformers(
            settings["passage_encoder"], work / "st-passage", role="passage", max_length=settings["max_length"]
        )
        runs = measure_runs(work, work / "folder", export, args)
    return {
        "corpus": str(corpus) if args.corpus else "$DPR_DATA_DIR/wiki/documents.jsonl",  # no machine path
        "folder": folder,
        "settings": settings,
        "repeats": args.repeats,
        "threads": args.threads,
        "runs": runs,
        "versions": installed_versions(VERSIONS),
        "machine": {"cpu": cpu_name(), "cores": os.cpu_count()},
    }


def rates(runs: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per run: files per second (files indexed, or checked when none was) and passages written per second."""
    found: dict[str, list[float]] = {"files": [], "passages": []}
    for run in runs:
        seconds = run["index_seconds"] or float("nan")
        files = run["files_indexed"] or run["files_unchanged"]
        found["files"].append(files / seconds)
        found["passages"].append(run["passages_written"] / seconds)
    return found


def spread(values: Sequence[float], digits: int = 1) -> str:
    """``min / median / max`` of ``values`` (the value alone when there is one)."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    middle = statistics.median(values)
    return f"{min(values):.{digits}f} / {middle:.{digits}f} / {max(values):.{digits}f}"


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else many or one + 's'}"


def median_of(runs: list[dict[str, Any]], key: str, digits: int = 1) -> str:
    return f"{statistics.median(run[key] for run in runs):.{digits}f}"


def table(summary_runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    """A row per system, then ours ÷ Haystack of the median rates."""
    columns = ["system", "files/s", "passages/s", "passages stored", "load s", "index s", "peak MiB"]
    rows = []
    for name, label in ROWS.items():
        runs = summary_runs[name]
        found = rates(runs)
        written = spread(found["passages"]) if any(run["passages_written"] for run in runs) else "—"
        rows.append([label, spread(found["files"]), written, str(runs[-1]["passages"]),
                     median_of(runs, "load_seconds"), median_of(runs, "index_seconds", 2),
                     median_of(runs, "peak_mib", 0)])  # fmt: skip
    ours, theirs = rates(summary_runs["ours"]), rates(summary_runs["haystack"])
    ratio = {key: statistics.median(ours[key]) / statistics.median(theirs[key]) for key in ours}
    rows.append(["**ours ÷ Haystack** (median rates)", f"{ratio['files']:.2f}×", f"{ratio['passages']:.2f}×",
                 "", "", "", ""])  # fmt: skip
    return markdown_table(columns, rows, align="lrrrrrr")


def render(summary: dict[str, Any]) -> str:
    """The page, from the run's JSON alone."""
    folder, settings, machine = summary["folder"], summary["settings"], summary["machine"]
    kinds = ", ".join(f"{count} {kind}" for kind, count in folder["per_kind"].items())
    passages = {name: summary["runs"][name][-1]["passages"] for name in SYSTEMS}
    stored = f"{passages['ours']:,} passages" + (
        "" if passages["ours"] == passages["haystack"] else f" (Haystack's: {passages['haystack']:,})"
    )
    cleaner = ", ".join(f"`{key}: {json.dumps(value)}`" for key, value in settings["cleaner"].items())
    splitter = ", ".join(f"`{key}: {json.dumps(value)}`" for key, value in settings["splitter"].items())
    backend = summary["runs"]["ours"][-1].get("backend", "?")
    used = folder["files"] * folder["paragraphs_per_file"]
    wrapped = f"; its {folder['corpus_rows']} documents used again in turn" if folder["corpus_rows"] < used else ""
    lines = [
        f"# {TITLE}", "", "Produced by:", "", "```", summary["command"], "```", "",
        f"On {machine['cpu']} ({machine['cores']} cores), {plural(summary['threads'], 'thread')} per process "
        f"(`OMP_NUM_THREADS`, `DPR_QUERY_THREADS`, `DPR_ENCODE_THREADS`); "
        + ", ".join(f"{name} {version}" for name, version in summary["versions"].items()) + ".",
        "",
        f"**The folder**: {folder['files']} files ({kinds}), each {folder['paragraphs_per_file']} consecutive "
        f"documents of `{summary['corpus']}` as its paragraphs (`nq-article` rows left out{wrapped}), "
        f"{folder['words']:,} words in all; {stored}. PDFs hold the text in ASCII (Helvetica); text files start with the title on a line of its "
        "own, Markdown files with a `# title` heading, "
        "HTML pages have a `<title>` and `<p>` paragraphs, PDFs and Word files carry the title in their properties.",
        "",
        f"**The same on both sides**: the splitter, our `DPRPassageSplitter` ({splitter}); Haystack's "
        f"`DocumentCleaner` ({cleaner}); Haystack's converters (`TextFileToDocument`, `MarkdownToDocument`, "
        "`HTMLToDocument`, `PyPDFToDocument`, `DOCXToDocument`) with the settings of `index_files.yml`; the weights "
        f"(`{settings['passage_encoder']}`, exported with `haystack export-st` for Haystack's embedder); "
        f"{settings['batch_size']} passages per encoding batch; a title embedded with each passage.",
        "",
        "**What differs**: ours is `index_files` as shipped: `FolderFetcher` lists and hashes the folder, "
        "`FolderSync` compares it with the store, `FileDocumentChecker` gives ids and titles (the file's own, else "
        f"its name), our `PassageEmbedder` (title and text as a pair; back end `auto`, here {backend}; no "
        "embedding cache) and `PassageWriter` into `EmbeddedDocumentStore` (Flat, inner product), files sent a "
        "step at a time, the store's FAISS and BM25 indexes built and saved at the end (in the index seconds). "
        "Haystack's side: `FileTypeRouter` given every file at once, each file's name as its title, "
        "`SentenceTransformersDocumentEmbedder` (torch; `meta_fields_to_embed=[\"title\"]`) and `DocumentWriter` "
        "into `InMemoryDocumentStore` (inner product), nothing saved to disk.",
        "",
        f"Each row: {plural(summary['repeats'], 'fresh process', 'fresh processes')}, the systems taking turns (the order turning each "
        "repeat). files/s and passages/s: min / median / max over them; load s (the pipeline built, its models "
        "loaded), index s and peak MiB (the process's high-water mark): medians. Our second row indexes the same "
        "folder again into the store of the first: `FolderSync` finds every file unchanged (files/s: files "
        "checked) and writes nothing; Haystack's pipeline has no such step and would index every file again.",
        "",
        *table(summary["runs"]),
        "",
    ]  # fmt: skip
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=500, help="files in the folder, the kinds in equal shares")
    parser.add_argument("--paragraphs", type=int, default=4, help="pool documents per file")
    parser.add_argument("--repeats", type=int, default=3, help="fresh processes per system")
    parser.add_argument("--threads", type=int, default=2, help="threads per process")
    parser.add_argument("--corpus", type=Path, help="JSONL of documents (default: $DPR_DATA_DIR/wiki/documents.jsonl)")
    parser.add_argument("--pipelines", help="folder holding an edited index_files.yml (default: the packaged one)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "benchmarks" / "files" / "folder_indexing")
    parser.add_argument("--from-json", action="store_true", help="render the page again from its JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    report_main(
        MODULE, build_parser(), argv, measure, render, at_least_one=("files", "paragraphs", "repeats", "threads")
    )


if __name__ == "__main__":
    main()
