"""Hard-negative mining: BM25 (Karpukhin et al. 2020, section 3.2: "top passages returned by
BM25 which don't contain the answer but match most question tokens"), dense (the top passages
of a dense retriever, as ANCE and RocketQA mine them), or both interleaved.

For each question the corpus is searched (BM25 over title + text, as in the benchmarks; dense
over fixed passage vectors, ``dense_mining.py``); the best-ranked passages that contain no
answer (``has_answer`` on the passage text) and are not part of a gold passage become
``hard_negative_ctxs``. With several retrievers their rankings are interleaved (first of each,
then second of each...). The output is DPR's
biencoder format as JSON lines, written resumably: records are appended to ``<out>.partial``
as they are mined, a restart skips the ids already there, and the finished file is renamed to
``<out>``. So mining and training are separate, restartable steps.

With ``split_positives`` a gold passage longer than ``words_per_passage`` words is cut into
DPR's 100-word blocks and the first block containing an answer (else the first block) becomes
the positive, so training positives look like the passages that are indexed."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from tqdm.auto import tqdm

from dpr_components.corpus.files import read_corpus
from dpr_components.corpus.passages import (
    DEFAULT_WORDS_PER_PASSAGE,
    Passage,
    split_document,
    split_text,
)
from dpr_components.document_stores.bm25_index import BM25Index
from dpr_components.dpr_data.examples import Ctx, TrainingExample
from dpr_components.evaluation.answer_matching import has_answer
from dpr_components.utils.atomic_files import atomic_path, atomic_write_text
from dpr_components.utils.json_files import complete_lines


@dataclass(frozen=True)
class NegativeMiningSettings:
    """Hard negatives for retriever training: ``num_negatives`` kept per question out of the top ``depth``
    (not :class:`~dpr_components.reader_training.data.ReaderMiningSettings`, which mines store ids for the reader)."""

    num_negatives: int = 30
    depth: int = 100
    split_positives: bool = True
    words_per_passage: int = DEFAULT_WORDS_PER_PASSAGE

    def __post_init__(self) -> None:
        if self.num_negatives < 1:
            raise ValueError(f"num_negatives must be positive, got {self.num_negatives}")
        if self.depth < self.num_negatives:
            raise ValueError(f"depth ({self.depth}) must be at least num_negatives ({self.num_negatives})")
        if self.words_per_passage < 1:
            raise ValueError(f"words_per_passage must be positive, got {self.words_per_passage}")


@dataclass
class MiningReport:
    """Counts of one mining run (``resumed``: records found already mined in the partial file)."""

    written: int = 0
    resumed: int = 0
    short_of_negatives: int = 0
    positives_split: int = 0
    positives_without_answer_block: int = 0
    negatives_total: int = 0

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


def load_corpus_passages(path: str | Path, words_per_passage: int = DEFAULT_WORDS_PER_PASSAGE) -> list[Passage]:
    """A corpus file (JSONL or DPR's TSV) split into DPR passages, in file order."""
    passages: list[Passage] = []
    for record in read_corpus(path):
        passages.extend(split_document(record.id, record.title, record.text, words_per_passage))
    return passages


def _normalized(text: str) -> str:
    return " ".join(text.split())


def corpus_digest(passages: Sequence[Passage]) -> str:
    digest = hashlib.sha256()
    for p in passages:
        digest.update(f"{p.id}\x1f{p.title}\x1f{p.text}\x1e".encode())
    return digest.hexdigest()[:16]


def bm25_for(passages: Sequence[Passage], cache_folder: Path | None = None, show_progress: bool = True) -> BM25Index:
    """BM25 over ``title + "\\n" + text`` of every passage; cached in ``cache_folder`` when given."""
    folder = cache_folder / f"bm25-{corpus_digest(passages)}" if cache_folder else None
    if folder is not None and folder.is_dir():
        with contextlib.suppress(ValueError, FileNotFoundError):
            index = BM25Index.load(folder)
            if len(index) == len(passages):
                return index
    index = BM25Index()
    index.build([f"{p.title}\n{p.text}" for p in passages], show_progress=show_progress)
    if folder is not None:
        index.save(folder)
    return index


def best_positive_block(positive: Ctx, answers: Sequence[str], words_per_passage: int) -> tuple[Ctx, bool]:
    """The first ``words_per_passage`` block holding an answer (and True), else the first block (False)."""
    blocks = split_text(positive.text, words_per_passage)
    for block in blocks:
        if has_answer(answers, block):
            return Ctx(positive.title, block), True
    return Ctx(positive.title, blocks[0]), False


class SearchIndex(Protocol):
    """What mining needs of a retriever over the corpus passages (BM25Index, DenseSearchIndex)."""

    def __len__(self) -> int: ...

    def search(self, query: str, top_k: int) -> tuple[np.ndarray, np.ndarray]: ...


class NegativeMiner:
    """Mines hard negatives for examples from ``passages`` with one or more indexes over them."""

    def __init__(
        self,
        passages: Sequence[Passage],
        index: SearchIndex | list[SearchIndex] | tuple[SearchIndex, ...],
        settings: NegativeMiningSettings | None = None,
    ) -> None:
        self.indexes: list[SearchIndex] = list(index) if isinstance(index, (list, tuple)) else [index]
        for one in self.indexes:
            if len(one) != len(passages):
                raise ValueError(f"an index holds {len(one)} passages but {len(passages)} were given")
        self.passages = passages
        self.settings = settings or NegativeMiningSettings()

    def _ranked(self, question: str) -> list[tuple[int, float]]:
        """(position, score) of every index's top ``depth``, interleaved rank by rank."""
        lists = [
            list(zip(*(a.tolist() for a in index.search(question, self.settings.depth)), strict=True))
            for index in self.indexes
        ]
        return [ranked[rank] for rank in range(self.settings.depth) for ranked in lists if rank < len(ranked)]

    def mine(self, example: TrainingExample, report: MiningReport | None = None) -> dict[str, Any]:
        """The example as a DPR record with ``hard_negative_ctxs`` (title, text, score, passage_id)."""
        report = report if report is not None else MiningReport()
        settings = self.settings
        gold_texts = [_normalized(p.text) for p in example.positives]
        positives = example.positives
        if settings.split_positives:
            positives = []
            for positive in example.positives:
                if len(positive.text.split()) <= settings.words_per_passage:
                    positives.append(positive)
                    continue
                block, found = best_positive_block(positive, example.answers, settings.words_per_passage)
                report.positives_split += 1
                report.positives_without_answer_block += not found
                positives.append(block)
        negatives: list[dict[str, Any]] = []
        seen: set[str] = set()
        for position, score in self._ranked(example.question):
            passage = self.passages[position]
            text = _normalized(passage.text)
            if text in seen or any(text in gold for gold in gold_texts):
                continue
            if has_answer(example.answers, passage.text):
                continue
            seen.add(text)
            negatives.append(
                {
                    "title": passage.title,
                    "text": passage.text,
                    "score": round(float(score), 4),
                    "passage_id": passage.id,
                }
            )
            if len(negatives) == settings.num_negatives:
                break
        report.short_of_negatives += len(negatives) < settings.num_negatives
        report.negatives_total += len(negatives)
        record = dataclasses.replace(example, positives=positives).to_dpr_record()
        record["hard_negative_ctxs"] = negatives
        return record


def _partial_paths(out: Path) -> tuple[Path, Path]:
    return out.with_name(out.name + ".partial"), out.with_name(out.name + ".partial.settings.json")


def _done_ids(partial: Path) -> set[str]:
    """Ids already in the partial file; a line cut short by a kill is removed first."""
    if not partial.exists():
        return set()
    ids = set()
    for number, line in enumerate(complete_lines(partial).splitlines(), start=1):
        try:
            ids.add(str(json.loads(line)["id"]))
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise ValueError(
                f"{partial}, line {number}: not a mined record ({error}); delete the file to restart"
            ) from error
    return ids


def mine_to_file(
    examples: Iterable[TrainingExample],
    miner: NegativeMiner,
    out: str | Path,
    total: int | None = None,
    show_progress: bool = True,
    extra_meta: dict[str, Any] | None = None,
) -> MiningReport:
    """Mine every example into ``out`` (DPR JSON lines); resumable, finished by an atomic rename.

    Also writes ``<out>.meta.json`` with the settings and counts. Example ids must be unique."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial, settings_file = _partial_paths(out)
    settings = {"mining": dataclasses.asdict(miner.settings), **(extra_meta or {})}
    if settings_file.exists():
        previous = json.loads(settings_file.read_text(encoding="utf-8"))
        if previous != settings:
            raise ValueError(
                f"{partial} was started with other settings ({previous}); delete it and {settings_file} to restart"
            )
    else:
        atomic_write_text(settings_file, json.dumps(settings, indent=1))
    done = _done_ids(partial)
    report = MiningReport(resumed=len(done))
    seen_ids: set[str] = set()
    with open(partial, "a", encoding="utf-8") as handle:
        bar = tqdm(examples, total=total, desc=f"Mining {out.name}", unit="q", disable=not show_progress)
        for example in bar:
            if example.id in seen_ids:
                raise ValueError(f"example id {example.id!r} occurs twice: ids must be unique to resume mining")
            seen_ids.add(example.id)
            if example.id in done:
                continue
            handle.write(json.dumps(miner.mine(example, report), ensure_ascii=False) + "\n")
            report.written += 1
            if report.written % 200 == 0:
                handle.flush()
        handle.flush()
        os.fsync(handle.fileno())
    meta = {**settings, "report": report.to_dict(), "records": len(seen_ids)}
    with atomic_path(out.with_name(out.name + ".meta.json")) as tmp:
        tmp.write_text(json.dumps(meta, indent=1), encoding="utf-8")
    os.replace(partial, out)
    settings_file.unlink(missing_ok=True)
    return report
