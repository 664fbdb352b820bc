"""An embedded BM25 index: bm25s's precomputed sparse score matrix over terms from
:class:`EnglishAnalyzer`, scored one query at a time with numpy."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import bm25s
import numpy as np

from dpr_components.document_stores.analyzer import ANALYZER_VERSION, STOP_WORD_SETS, EnglishAnalyzer
from dpr_components.document_stores.index_files import IndexFilesError, verified_state, write_index_directory
from dpr_components.fault_points import fault_point

METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
META_FILE = "bm25_index.json"
FORMAT_VERSION = 1
# Methods that give every document a score for a query term it lacks (bm25s's non-occurrence array).
_NONOCCURRENCE_METHODS = ("bm25l", "bm25+")

_EMPTY_POSITIONS = np.empty(0, dtype=np.int64)
_EMPTY_SCORES = np.empty(0, dtype=np.float32)


class BM25Index:
    """BM25 over a list of texts; documents are addressed by their position in that list.

    ``method`` picks bm25s's BM25 variant ("lucene" matches Lucene's ``BM25Similarity`` up to
    Lucene's lossy storage of document lengths). ``stemmer`` and ``stopwords`` configure the
    analyzer (see :class:`EnglishAnalyzer`)."""

    def __init__(
        self,
        k1: float = 0.9,
        b: float = 0.4,
        method: str = "lucene",
        stemmer: str | None = "porter",
        stopwords: str | None = "lucene",
    ) -> None:
        if not k1 >= 0:
            raise ValueError(f"k1 must be >= 0, got {k1}")
        if not 0 <= b <= 1:
            raise ValueError(f"b must be in [0, 1], got {b}")
        if method not in METHODS:
            raise ValueError(f"unknown BM25 method {method!r}; choose one of {METHODS}")
        if stopwords is not None and stopwords not in STOP_WORD_SETS:
            raise ValueError(f"unknown stop word set {stopwords!r}; choose one of {sorted(STOP_WORD_SETS)} or None")
        self.k1 = float(k1)
        self.b = float(b)
        self.method = method
        self.analyzer = EnglishAnalyzer(stemmer=stemmer, stopwords=stopwords)
        self._stopwords_name = stopwords
        self._bm25: bm25s.BM25 | None = None
        self._vocab: dict[str, int] = {}
        self._num_docs = 0
        self.state: dict[str, Any] = {}  # what was saved with the index (see save)

    @property
    def params(self) -> dict[str, Any]:
        return {
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "stemmer": self.analyzer.stemmer_name,
            "stopwords": self._stopwords_name,
        }

    def __len__(self) -> int:
        return self._num_docs

    def build(self, texts: Sequence[str], show_progress: bool = False) -> None:
        """(Re)index ``texts``; position ``i`` in later results is ``texts[i]``."""
        vocab: dict[str, int] = {}
        corpus_ids: list[list[int]] = []
        analyze = self.analyzer.analyze
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"text at position {i} is {type(text).__name__}, expected str")
            terms = analyze(text)
            for term in dict.fromkeys(terms):  # first-seen order keeps term ids reproducible
                if term not in vocab:
                    vocab[term] = len(vocab)
            corpus_ids.append(list(map(vocab.__getitem__, terms)))
        if not corpus_ids or not vocab:
            self._bm25, self._vocab, self._num_docs = None, {}, len(corpus_ids)
            return
        bm25 = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        with _quiet_bm25s():
            bm25.index((corpus_ids, vocab), create_empty_token=False, show_progress=show_progress)
        self._bm25, self._vocab, self._num_docs = bm25, vocab, len(corpus_ids)

    def _term_ids(self, query: str) -> np.ndarray:
        vocab = self._vocab
        return np.fromiter((vocab[t] for t in self.analyzer.analyze(query) if t in vocab), dtype=np.int64)

    def _postings(self, term_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Concatenated (document positions, partial scores) of the query terms; repeats count again."""
        assert self._bm25 is not None
        matrix = self._bm25.scores
        indptr, indices, data = matrix["indptr"], matrix["indices"], matrix["data"]
        if len(term_ids) == 1:
            start, end = indptr[term_ids[0]], indptr[term_ids[0] + 1]
            return indices[start:end], data[start:end]
        slices = [slice(indptr[t], indptr[t + 1]) for t in term_ids]
        return np.concatenate([indices[s] for s in slices]), np.concatenate([data[s] for s in slices])

    def _nonoccurrence(self, term_ids: np.ndarray) -> float:
        assert self._bm25 is not None
        if self.method not in _NONOCCURRENCE_METHODS or self._bm25.nonoccurrence_array is None:
            return 0.0
        return float(self._bm25.nonoccurrence_array[term_ids].sum())

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of ``query`` for every position (float32; 0 where no term matches for most methods)."""
        out = np.zeros(self._num_docs, dtype=np.float32)
        if self._bm25 is None:
            return out
        term_ids = self._term_ids(query)
        if len(term_ids) == 0:
            return out
        docs, partial = self._postings(term_ids)
        out[:] = np.bincount(docs, weights=partial, minlength=self._num_docs)
        out += self._nonoccurrence(term_ids)
        return out

    def search(self, query: str, top_k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Best ``top_k`` positions sharing a term with ``query`` and their scores, best first.

        ``allowed`` is an optional boolean mask over positions; others are never returned. Ties
        go to the lower position."""
        if top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {top_k}")
        if allowed is not None:
            allowed = np.asarray(allowed)
            if allowed.dtype != np.bool_ or allowed.shape != (self._num_docs,):
                raise ValueError(
                    f"allowed must be a boolean mask of shape ({self._num_docs},), "
                    f"got dtype {allowed.dtype} and shape {allowed.shape}"
                )
        if self._bm25 is None or top_k == 0:
            return _EMPTY_POSITIONS, _EMPTY_SCORES
        term_ids = self._term_ids(query)
        if len(term_ids) == 0:
            return _EMPTY_POSITIONS, _EMPTY_SCORES
        docs, partial = self._postings(term_ids)
        totals = np.bincount(docs, weights=partial, minlength=self._num_docs)
        matched = np.zeros(self._num_docs, dtype=np.bool_)
        matched[docs] = True
        if allowed is not None:
            matched &= allowed
        candidates = np.flatnonzero(matched)
        candidate_scores = totals[candidates]
        if len(candidates) > top_k:
            keep = np.argpartition(-candidate_scores, top_k - 1)[:top_k]
            # argpartition splits ties at the k-th score arbitrarily: take every tied candidate, then cut.
            threshold = candidate_scores[keep].min()
            keep = np.flatnonzero(candidate_scores >= threshold)
            candidates, candidate_scores = candidates[keep], candidate_scores[keep]
        order = np.lexsort((candidates, -candidate_scores))[:top_k]
        result_scores = (candidate_scores[order] + self._nonoccurrence(term_ids)).astype(np.float32)
        return candidates[order].astype(np.int64), result_scores

    def write_files(self, directory: Path) -> None:
        """Write the index files into the (new, empty) folder ``directory``."""
        meta = {
            "format_version": FORMAT_VERSION, "analyzer_version": ANALYZER_VERSION,
            "num_docs": self._num_docs, "params": self.params,
        }
        if self._bm25 is not None:
            self._bm25.save(directory, show_progress=False)
        fault_point("bm25_index.saving")
        (directory / META_FILE).write_text(json.dumps(meta, indent=2), encoding="utf-8")

    def save(self, directory: Path, **state: Any) -> None:
        """Write the index, its parameters and a checksum manifest (with ``state``) to
        ``directory``, replacing it atomically."""
        with write_index_directory(Path(directory), state) as tmp:
            self.write_files(tmp)

    @classmethod
    def load(cls, directory: Path) -> BM25Index:
        """Read an index written by :meth:`save`, after checking its files against their
        checksums; ``state`` holds what was saved with it."""
        directory = Path(directory)
        if not (directory / META_FILE).is_file():
            raise FileNotFoundError(f"no BM25 index at {directory}: {META_FILE} is missing")
        try:
            state = verified_state(directory)
        except IndexFilesError as error:
            raise ValueError(f"corrupt BM25 index at {directory}: {error}") from error
        index = cls.read_files(directory)
        index.state = state
        return index

    @classmethod
    def read_files(cls, directory: Path) -> BM25Index:
        """Read the index files of ``directory`` (checked for consistency, not against checksums)."""
        directory = Path(directory)
        meta_path = directory / META_FILE
        if not meta_path.is_file():
            raise FileNotFoundError(f"no BM25 index at {directory}: {META_FILE} is missing")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            version, num_docs, params = meta["format_version"], int(meta["num_docs"]), meta["params"]
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"corrupt BM25 index at {directory}: unreadable {META_FILE} ({error})") from error
        if version != FORMAT_VERSION:
            raise ValueError(f"BM25 index at {directory} has format version {version}, expected {FORMAT_VERSION}")
        if meta.get("analyzer_version") != ANALYZER_VERSION:
            raise ValueError(
                f"BM25 index at {directory} was built with analyzer version {meta.get('analyzer_version')}, "
                f"this code analyzes text with version {ANALYZER_VERSION}: rebuild it"
            )
        try:
            index = cls(**params)
        except (TypeError, ValueError) as error:
            raise ValueError(f"corrupt BM25 index at {directory}: bad parameters {params!r} ({error})") from error
        index._num_docs = num_docs
        if not (directory / "params.index.json").exists():
            if num_docs and _has_bm25_files(directory):
                raise ValueError(f"corrupt BM25 index at {directory}: params.index.json is missing")
            return index  # saved without any indexed term
        index._bm25, index._vocab = _load_bm25(directory, num_docs)
        return index


def _has_bm25_files(directory: Path) -> bool:
    return any(directory.glob("*.index.*"))


@contextlib.contextmanager
def _quiet_bm25s() -> Iterator[None]:
    """bm25s sets its logger to DEBUG and logs every build and load; keep that out of callers' logs."""
    bm25s_logger = logging.getLogger("bm25s")
    level = bm25s_logger.level
    bm25s_logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        bm25s_logger.setLevel(level)


def _load_bm25(directory: Path, num_docs: int) -> tuple[bm25s.BM25, dict[str, int]]:
    try:
        with _quiet_bm25s():
            bm25 = bm25s.BM25.load(directory, show_progress=False, verbosity=0)
    except (OSError, ValueError, KeyError, TypeError, EOFError) as error:
        raise ValueError(f"corrupt BM25 index at {directory}: {error}") from error
    matrix = bm25.scores
    vocab = bm25.vocab_dict
    n_terms = len(vocab)
    consistent = (
        matrix.get("num_docs") == num_docs
        and len(matrix["indptr"]) == n_terms + 1
        and len(matrix["data"]) == len(matrix["indices"]) == int(matrix["indptr"][-1])
        and (len(matrix["indices"]) == 0 or int(matrix["indices"].max()) < num_docs)
        and sorted(vocab.values()) == list(range(n_terms))
    )
    if not consistent:
        raise ValueError(f"corrupt BM25 index at {directory}: score matrix, vocabulary and document count disagree")
    return bm25, vocab
