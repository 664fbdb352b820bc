"""``haystack run`` of an indexing pipeline on a corpus file, streamed: memory holds one chunk, never the corpus.

Given in one piece, a corpus travels whole from component to component, every passage's vector
as a list of Python floats (about 12 KB per passage for 384 dimensions), and the writer makes
its own copies: a million passages need more than 24 GB. Streamed, the corpus goes through the
pipeline about a megabyte of text at a time (as ``records`` of the reader, the way a shard run feeds
its part: :mod:`dpr_components.index_runs.shard_run`), with the same passages, ids and vectors as one
run would give.

The corpus file is read once first, with every check of the reader (format, fields, duplicate
ids, empty texts), so a malformed line refuses the run before anything is written and the
progress bar knows its total. After the last chunk, each embedded store's indexes (FAISS and
BM25) are built and saved. An interrupted run is resumed by running the same command again:
vectors already made come from the embedder's cache and passages are written under their
stable ids."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from haystack import Pipeline
from tqdm.auto import tqdm

from dpr_components.corpus.files import read_corpus
from dpr_components.index_runs.shard_run import CHUNK_CHARS, Runner, record_chunks, the_reader
from dpr_components.utils.input_files import check_input_path
from haystack_integrations.components.converters.dpr.corpus_reader import CorpusReader
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

WRITTEN = "documents_written"


def streamable_corpus(pipeline: Pipeline, inputs: dict[str, dict[str, Any]]) -> str | None:
    """The corpus file of a run that can be streamed: the pipeline has one ``CorpusReader``, given
    a ``path`` (not ``records``), and writes its passages (an output named ``documents_written``)."""
    readers = [name for name, instance in pipeline.walk() if isinstance(instance, CorpusReader)]
    if len(readers) != 1:
        return None
    given = inputs.get(readers[0], {})
    path = given.get("path")
    if not isinstance(path, str) or given.get("records") is not None:
        return None
    writes = any(WRITTEN in outputs for outputs in pipeline.outputs().values())
    return path if writes else None


def run_streamed(
    pipeline: Pipeline,
    corpus: str,
    inputs: dict[str, dict[str, Any]] | None = None,
    run: Runner | None = None,
    report: Callable[[str], None] | None = None,
    chunk_chars: int = CHUNK_CHARS,
) -> dict[str, dict[str, int]]:
    """Index ``corpus`` with ``pipeline`` chunk by chunk (see the module docstring).

    Progress: when a component has its bar on (the embedder's ``progress_bar``), one bar covers the
    corpus's documents (rate, ETA, passages written) instead of the components' bars per chunk.

    :param inputs: the pipeline's other inputs, per component (the reader's ``path`` is dropped).
    :param run: runs the pipeline on one chunk's inputs (default ``pipeline.run``).
    :param report: receives a line when the stores' indexes are saved.
    :param chunk_chars: about how many characters of text go through the pipeline at a time.
    :returns: per writer, ``documents_written`` over the whole corpus, as one run returns it."""
    reader_name, reader = the_reader(pipeline)
    corpus = check_input_path(corpus, "corpus file")
    show_progress = any(getattr(instance, "progress_bar", None) is True for _, instance in pipeline.walk())
    documents = _checked_documents(corpus, reader, show_progress)
    pipeline.warm_up()  # models load before the bar starts
    other = {name: values for name, values in (inputs or {}).items() if name != reader_name}
    reader_inputs = {k: v for k, v in (inputs or {}).get(reader_name, {}).items() if k != "path"}
    with (
        component_bars_off(pipeline),
        tqdm(total=documents, desc="Indexing", unit="doc", disable=not show_progress, smoothing=0.1) as bar,
    ):
        counted = _CountedRuns(run or pipeline.run, reader_name, bar)
        for chunk in record_chunks(read_corpus(corpus, reader.format, reader.on_empty), chunk_chars):
            counted({**other, reader_name: {**reader_inputs, "records": chunk}})
    save_stores(pipeline, report)
    return {name: {WRITTEN: count} for name, count in counted.written.items()}


class _CountedRuns:
    """Runs the pipeline on each chunk, adds up what each writer wrote and moves the bar on."""

    def __init__(self, run: Runner, reader_name: str, bar: Any) -> None:
        self.run, self.reader_name, self.bar = run, reader_name, bar
        self.written: dict[str, int] = {}

    def __call__(self, data: dict[str, Any]) -> dict[str, Any]:
        result = self.run(data)
        for name, outputs in result.items():
            if WRITTEN in outputs:
                self.written[name] = self.written.get(name, 0) + outputs[WRITTEN]
        passages = sum(self.written.values())
        elapsed = self.bar.format_dict.get("elapsed") or 0.0
        rate = f", {passages / elapsed:,.0f}/s" if elapsed > 0 else ""
        self.bar.set_postfix_str(f"{passages:,} passages{rate}", refresh=False)
        self.bar.update(len(data[self.reader_name]["records"]))
        return result


def _checked_documents(corpus: str, reader: CorpusReader, show_progress: bool) -> int:
    """The documents of ``corpus``, every line checked as the reader checks it (nothing kept)."""
    records = read_corpus(corpus, reader.format, reader.on_empty)
    return sum(1 for _ in tqdm(records, desc="Checking corpus", unit="doc", disable=not show_progress))


@contextmanager
def component_bars_off(pipeline: Pipeline) -> Iterator[None]:
    """Silence the components' own progress bars (one per chunk) while the run's bar covers the corpus."""
    silenced = [instance for _, instance in pipeline.walk() if getattr(instance, "progress_bar", None) is True]
    for instance in silenced:
        setattr(instance, "progress_bar", False)  # noqa: B010 - any component with the attribute, not one class
    try:
        yield
    finally:
        for instance in silenced:
            setattr(instance, "progress_bar", True)  # noqa: B010


def save_stores(pipeline: Pipeline, report: Callable[[str], None] | None) -> None:
    """Build and save the indexes of each store that keeps them (the embedded store); errors (a
    full disk) surface here, not in a finaliser at exit. A folder named by several components is saved once."""
    saved = set()
    for name, instance in pipeline.walk():
        store = getattr(instance, "document_store", None)
        if isinstance(store, EmbeddedDocumentStore) and (store.path is None or store.path not in saved):
            saved.add(store.path)
            if report:
                report(f"{name}: building and saving the indexes of {store.path}")
            store.save()
