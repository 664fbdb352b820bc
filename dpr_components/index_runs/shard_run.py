"""Index one shard of a corpus file with an indexing pipeline, streaming the corpus in chunks.

The shard is a contiguous range of lines (:mod:`dpr_components.index_runs.corpus_split`). The
process reads the corpus with the one-process checks up to the end of its range (so every
malformed line and every duplicate id is refused by the shard that owns it, with file and
line) and feeds its own documents to the pipeline as ``records``, about ``chunk_chars``
characters at a time, so memory holds one chunk, never the shard.

Where the passages go:

- with ``shard_dir``: the pipeline's writer is taken out and the embedded passages are written
  to ``shard_dir/shard-<i>-of-<N>/`` (:mod:`dpr_components.index_runs.shard_files`), made in a
  temporary folder and renamed into place when complete; ``merge_shards`` writes the shards
  into one store later;
- without: into the pipeline's own writer, e.g. straight into Elasticsearch (documents of
  different shards are disjoint, so the shards need no merge there)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haystack import Pipeline

from dpr_components.corpus.files import CorpusRecord, read_corpus
from dpr_components.index_runs.corpus_split import CorpusSplit, split_corpus
from dpr_components.index_runs.shard_files import ShardFolderWriter
from dpr_components.index_runs.shard_spec import ShardSpec
from dpr_components.utils.atomic_files import atomic_directory
from dpr_components.utils.input_files import check_input_path
from dpr_components.utils.output_folders import SHARDS, check_output_folder
from haystack_integrations.components.converters.dpr.corpus_reader import CorpusReader

CHUNK_CHARS = 1_000_000  # about 1,500 passages of 100 words: one pipeline run's worth
_NO_EFFECT = {"progress_bar", "cache_dir", "batch_size"}  # parameters that do not change the passages or vectors

Runner = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class ShardResult:
    spec: ShardSpec
    lines: tuple[int, int]
    documents: int
    passages: int
    folder: Path | None


def _split_for(corpus: str, spec: ShardSpec) -> CorpusSplit:
    """The corpus cut into ``spec.count`` parts; an error when it has fewer lines than parts."""
    split = split_corpus(corpus, spec.count)
    if spec.count > split.lines:
        raise ValueError(
            f"--shard {spec}: {corpus} has {split.lines:,} lines, fewer than the {spec.count:,} shards; give N at most its line count"
        )
    return split


def run_shard(
    pipeline: Pipeline,
    corpus: str,
    spec: ShardSpec,
    shard_dir: str | Path | None = None,
    inputs: dict[str, Any] | None = None,
    run: Runner | None = None,
    report: Callable[[str], None] | None = None,
    chunk_chars: int = CHUNK_CHARS,
) -> ShardResult:
    """Index the documents of shard ``spec`` of ``corpus`` with ``pipeline`` (see the module docstring).

    :param inputs: other pipeline inputs, per component (the reader's ``records`` is set here).
    :param run: runs the pipeline on one chunk's inputs (default ``pipeline.run``).
    :param report: receives a progress line after each chunk."""
    if shard_dir is not None:
        check_output_folder(shard_dir, SHARDS, replace=False, hint="choose another folder for the shards")
    reader_name, reader = the_reader(pipeline)
    corpus = check_input_path(corpus, "corpus file")
    split = _split_for(corpus, spec)
    first, end = split.line_range(spec.index)
    sender = _detach_writer(pipeline) if shard_dir is not None else None
    inputs = dict(inputs or {})
    run = run or pipeline.run
    documents = passages = 0

    def chunk_results() -> Iterator[dict[str, Any]]:
        nonlocal documents
        for chunk in record_chunks(_shard_records(corpus, reader, first, end), chunk_chars):
            result = run({**inputs, reader_name: {**inputs.get(reader_name, {}), "records": chunk}})
            documents += len(chunk)
            yield result

    def progress() -> None:
        if report:
            report(
                f"shard {spec}: {documents:,} documents, {passages:,} passages (corpus lines {first:,} to {end - 1:,} of {split.lines:,})"
            )

    if sender is None or shard_dir is None:  # both or neither
        for result in chunk_results():
            passages += sum(v for outputs in result.values() for k, v in outputs.items() if k == "documents_written")
            progress()
        return ShardResult(spec, (first, end), documents, passages, None)

    target = Path(shard_dir) / spec.folder_name
    with atomic_directory(target) as temporary:
        out = ShardFolderWriter(temporary)
        try:
            for result in chunk_results():
                out.write(result[sender[0]][sender[1]])
                passages = out.passages
                progress()
            out.finish(_manifest(spec, corpus, split, documents, pipeline))
        finally:
            out.close()
    return ShardResult(spec, (first, end), documents, passages, target)


def _manifest(spec: ShardSpec, corpus: str, split: CorpusSplit, documents: int, pipeline: Pipeline) -> dict[str, Any]:
    """What a finished shard folder records: its place in the corpus, its size and the pipeline's settings."""
    corpus_facts = {"file": Path(corpus).name, "sha256": split.sha256, "bytes": split.size, "lines": split.lines}
    lines = list(split.line_range(spec.index))
    return {
        "shard": str(spec),
        "corpus": corpus_facts,
        "lines": lines,
        "documents": documents,
        "settings": pipeline_settings(pipeline),
    }


def pipeline_settings(pipeline: Pipeline) -> dict[str, Any]:
    """What makes the passages and vectors: each component's parameters, an encoder's fingerprint
    (its weights and every setting that changes its vectors) instead of its model path."""
    settings: dict[str, Any] = {}
    for name, instance in pipeline.walk():
        fingerprint = getattr(getattr(instance, "encoder", None), "fingerprint", None)
        if callable(fingerprint):
            settings[name] = {"type": type(instance).__name__, "encoder": fingerprint()}
            continue
        to_dict = getattr(instance, "to_dict", None)
        data = to_dict() if callable(to_dict) else {}
        params = {k: v for k, v in (data.get("init_parameters") or {}).items() if k not in _NO_EFFECT}
        settings[name] = {"type": type(instance).__name__, **params}
    return json.loads(json.dumps(settings, default=str))


def the_reader(pipeline: Pipeline) -> tuple[str, CorpusReader]:
    readers = [(name, instance) for name, instance in pipeline.walk() if isinstance(instance, CorpusReader)]
    if len(readers) != 1:
        raise ValueError(
            f"--shard needs a pipeline with one CorpusReader (like pipelines/index.yml), this one has {len(readers)}"
        )
    return readers[0]


def _detach_writer(pipeline: Pipeline) -> tuple[str, str]:
    """Remove the pipeline's writer; return the (component, output) that fed it, now the result."""
    writers = [name for name, instance in pipeline.walk() if type(instance).__name__.endswith("Writer")]
    if len(writers) != 1:
        raise ValueError(
            f"--shard-dir replaces the pipeline's writer by the shard folder: it needs one writer, found {writers or 'none'}"
        )
    senders = [
        tuple(c["sender"].split(".", 1))
        for c in pipeline.to_dict().get("connections", [])
        if c["receiver"] == f"{writers[0]}.documents"
    ]
    if len(senders) != 1:
        raise ValueError(f"--shard-dir: the writer {writers[0]!r} must receive its documents from one component")
    pipeline.remove_component(writers[0])
    return senders[0][0], senders[0][1]


def _shard_records(corpus: str, reader: CorpusReader, first: int, end: int) -> Iterator[CorpusRecord]:
    """The documents on lines ``[first, end)``, every line before them checked too."""
    for record in read_corpus(corpus, reader.format, reader.on_empty):
        if record.line >= end:
            return
        if record.line >= first:
            yield record


def record_chunks(records: Iterator[CorpusRecord], chunk_chars: int) -> Iterator[list[dict[str, str]]]:
    """The records as ``records`` inputs of the reader, about ``chunk_chars`` characters of text each."""
    chunk: list[dict[str, str]] = []
    size = 0
    for record in records:
        chunk.append({"id": record.id, "title": record.title, "text": record.text})
        size += len(record.text)
        if size >= chunk_chars:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk
