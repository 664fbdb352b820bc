"""An embedded BM25 index that takes writes: raw term frequencies in segments, BM25 statistics
(N, document frequencies, average length) computed at query time from the current collection.

Why not bm25s's precomputed score matrix: every added or removed document changes N, the
document frequencies and the average length, hence every precomputed score, so each write
meant a rebuild. Here a write costs what it writes: new documents go to a small new segment,
removed ones become tombstones (out of N, df and the average length, never returned), and
segments are merged when the new ones grow past a fraction of the main one, and on save. Scores
reproduce bm25s's formulas and arithmetic (see :mod:`bm25_scoring`), so an index written to
incrementally scores exactly as one built from scratch over the same live documents."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from tqdm.auto import tqdm

from dpr_components.document_stores import bm25_scoring
from dpr_components.document_stores.analyzer import (
    ANALYZER_VERSION,
    STOP_WORD_SETS,
    EnglishAnalyzer,
)
from dpr_components.document_stores.bm25_segments import (
    Segment,
    empty_segment,
    merge_segments,
    segment_from_terms,
)
from dpr_components.document_stores.index_files import (
    IndexFilesError,
    verified_state,
    write_index_directory,
)
from dpr_components.utils.fault_points import fault_point

METHODS = bm25_scoring.METHODS
META_FILE = "bm25_index.json"
FORMAT_VERSION = 2  # 1: bm25s's precomputed score matrix
# Merge every segment into the main one when newer segments and tombstoned postings of the main
# one hold more than this fraction of its documents; merge the newer ones when there are too many.
MERGE_FRACTION = 0.1
MAX_NEW_SEGMENTS = 8
# Partial scores kept between writes (float32 each): about as many as the postings of a
# million passages' frequent terms.
CACHE_POSTINGS = 8_000_000
_FILES = {
    "indptr": "indptr.csc.index.npy",  # per term: start of its postings
    "positions": "indices.csc.index.npy",  # per posting: document position
    "tf": "data.csc.index.npy",  # per posting: term frequency
    "lengths": "doc_lengths.index.npy",  # per position: document length in terms
    "live": "live.index.npy",  # per position: False once removed
}
VOCAB_FILE = "vocab.index.json"

_EMPTY_POSITIONS = np.empty(0, dtype=np.int64)
_EMPTY_SCORES = np.empty(0, dtype=np.float32)


class _Match(NamedTuple):
    """A query's postings: matched positions (with repeats), per-position float64 sums, and the
    score every position gets for the query terms it lacks (non-zero for bm25l / bm25+ only)."""

    docs: np.ndarray
    totals: np.ndarray
    nonoccurrence: float


class _ScoredTerm(NamedTuple):
    """A term's live postings scored for the current collection (see ``BM25Index._scored_terms``)."""

    positions: np.ndarray
    partial: np.ndarray  # float32, as bm25s stores partial scores
    missing: np.float32  # non-occurrence score


class BM25Index:
    """BM25 over a list of texts; documents are addressed by their position in that list.

    ``method`` picks bm25s's BM25 variant ("lucene" matches Lucene's ``BM25Similarity`` up to
    Lucene's lossy storage of document lengths). ``stemmer`` and ``stopwords`` configure the
    analyzer (see :class:`EnglishAnalyzer`).

    :meth:`add` appends documents at new positions; :meth:`remove` and :meth:`replace` keep
    positions stable (a removed position stays, as a tombstone, until :meth:`compacted`).
    ``len(index)`` counts positions, :attr:`live_count` the documents BM25 ranks."""

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
        self.state: dict[str, Any] = {}  # what was saved with the index (see save)
        self._reset()

    def _reset(self) -> None:
        # Term ids only grow (until compacted), so readers of an older copy never misread a new id.
        self._vocab: dict[str, int] = {}
        self._segments: list[Segment] = [empty_segment()]  # [main, newer...]
        self._lengths = np.zeros(0, dtype=np.int32)  # per position
        self._live = np.zeros(0, dtype=np.bool_)  # per position
        self._segment_of = np.zeros(0, dtype=np.int32)  # per position: segment holding its postings
        self._slot_of = np.zeros(0, dtype=np.int64)  # per position: its slot there
        self._live_count = 0
        self._total_length = 0  # of live documents
        self._norms: np.ndarray | None = None  # per position, for the current N and average length
        self._cache: dict[int, _ScoredTerm] = {}  # per term, for the current collection (see _scored_terms)
        self._cached_postings = 0

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
        return len(self._lengths)

    @property
    def live_count(self) -> int:
        """Documents in the collection (positions not removed)."""
        return self._live_count

    def is_live(self, positions: np.ndarray) -> np.ndarray:
        """Whether each of ``positions`` (valid positions) holds a document that was not removed."""
        return self._live[positions]

    # -- writes -----------------------------------------------------------------------------
    def build(self, texts: Sequence[str], show_progress: bool = False) -> None:
        """(Re)index ``texts``; position ``i`` in later results is ``texts[i]``."""
        self._reset()
        term_ids, lengths = self._analyze(texts, show_progress)
        segment = segment_from_terms(term_ids, lengths, len(self._vocab), None)
        self._segments = [segment]
        self._lengths = lengths
        self._live = np.ones(len(lengths), dtype=np.bool_)
        self._segment_of = np.zeros(len(lengths), dtype=np.int32)
        self._slot_of = np.arange(len(lengths), dtype=np.int64)
        self._live_count, self._total_length = len(lengths), int(lengths.sum())

    def add(self, texts: Sequence[str]) -> np.ndarray:
        """Index ``texts`` at new positions (after the current ones); returns those positions."""
        term_ids, lengths = self._analyze(texts)
        start = len(self)
        positions = np.arange(start, start + len(lengths), dtype=np.int64)
        if not len(positions):
            return positions
        self._segments = [*self._segments, segment_from_terms(term_ids, lengths, len(self._vocab), positions)]
        self._lengths = np.concatenate([self._lengths, lengths])
        self._live = np.concatenate([self._live, np.ones(len(lengths), dtype=np.bool_)])
        self._segment_of = np.concatenate([self._segment_of, np.full(len(lengths), len(self._segments) - 1, np.int32)])
        self._slot_of = np.concatenate([self._slot_of, np.arange(len(lengths), dtype=np.int64)])
        self._live_count += len(lengths)
        self._total_length += int(lengths.sum())
        self._changed()
        return positions

    def remove(self, positions: Sequence[int] | np.ndarray) -> None:
        """Remove the documents at ``positions``: they leave N, the document frequencies and the
        average length, and are never returned; the other positions keep their number."""
        positions = self._live_positions(positions, "remove")
        if not len(positions):
            return
        self._kill(positions)
        self._live[positions] = False
        self._live_count -= len(positions)
        self._total_length -= int(self._lengths[positions].sum())
        self._changed()

    def replace(self, positions: Sequence[int] | np.ndarray, texts: Sequence[str]) -> None:
        """Index ``texts[i]`` in place of the document at ``positions[i]`` (same position)."""
        positions = self._live_positions(positions, "replace")
        if len(texts) != len(positions):
            raise ValueError(f"replace got {len(positions)} positions but {len(texts)} texts")
        if not len(positions):
            return
        term_ids, lengths = self._analyze(texts)
        self._kill(positions)
        self._segments = [*self._segments, segment_from_terms(term_ids, lengths, len(self._vocab), positions)]
        self._total_length += int(lengths.sum()) - int(self._lengths[positions].sum())
        self._lengths[positions] = lengths
        self._segment_of[positions] = len(self._segments) - 1
        self._slot_of[positions] = np.arange(len(positions))
        self._changed()

    def _live_positions(self, positions: Sequence[int] | np.ndarray, action: str) -> np.ndarray:
        array = np.asarray(positions)
        if array.size == 0:
            return _EMPTY_POSITIONS
        if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
            raise ValueError(
                f"{action} takes a 1-D sequence of integer positions, got {array.dtype} of shape {array.shape}"
            )
        array = array.astype(np.int64)
        bad = array[(array < 0) | (array >= len(self))]
        if len(bad):
            raise ValueError(f"cannot {action} position {int(bad[0])}: the index has positions 0 to {len(self) - 1}")
        if len(np.unique(array)) != len(array):
            raise ValueError(f"cannot {action} a position twice in one call")
        removed = array[~self._live[array]]
        if len(removed):
            raise ValueError(f"cannot {action} position {int(removed[0])}: it was removed")
        return array

    def _kill(self, positions: np.ndarray) -> None:
        """Tombstone the current postings of ``positions`` in their segments."""
        segment_of = self._segment_of[positions]
        for s in np.unique(segment_of):
            self._segments[s].kill(self._slot_of[positions[segment_of == s]])

    def _changed(self) -> None:
        self._norms = None
        self._cache, self._cached_postings = {}, 0
        main, newer = self._segments[0], self._segments[1:]
        load = sum(s.num_slots for s in newer) + main.stale
        if load > MERGE_FRACTION * main.num_slots:
            self.merge()
        elif len(newer) > MAX_NEW_SEGMENTS:
            self._merge_newer()

    def merge(self) -> None:
        """Merge every segment into one, dropping tombstoned postings (positions are unchanged)."""
        if len(self._segments) == 1 and not self._segments[0].stale and self._segments[0].num_slots == len(self):
            return
        merged = merge_segments(self._segments, len(self._vocab), len(self))
        merged.live[:] = self._live
        self._segments = [merged]
        self._segment_of = np.zeros(len(self), dtype=np.int32)
        self._slot_of = np.arange(len(self), dtype=np.int64)

    def _merge_newer(self) -> None:
        merged = merge_segments(self._segments[1:], len(self._vocab), None)
        assert merged.positions is not None
        self._segments = [self._segments[0], merged]
        self._segment_of[merged.positions] = 1
        self._slot_of[merged.positions] = np.arange(merged.num_slots)

    def copy(self) -> BM25Index:
        """An independent copy sharing the (never modified) postings: writing to it leaves
        this index, and searches running on it, untouched. Costs a few bytes per position."""
        twin = object.__new__(BM25Index)
        twin.__dict__.update(self.__dict__)
        twin.state = dict(self.state)
        twin._cache, twin._cached_postings = {}, 0
        twin._segments = [s.with_own_flags() for s in self._segments]
        for name in ("_lengths", "_live", "_segment_of", "_slot_of"):
            setattr(twin, name, getattr(self, name).copy())
        return twin

    def compacted(self) -> tuple[BM25Index, np.ndarray]:
        """This index without its removed positions (and terms only they held), merged, and the
        old position of each new one; ``self`` when nothing was removed."""
        self.merge()
        kept = np.flatnonzero(self._live)
        if len(kept) == len(self):
            return self, kept
        twin = self.copy()
        main = self._segments[0]
        new_position = np.cumsum(self._live) - 1
        postings_per_term = np.diff(main.indptr)
        used = np.flatnonzero(postings_per_term > 0)
        terms = self._terms()
        twin._vocab = {terms[t]: i for i, t in enumerate(used.tolist())}
        indptr = np.zeros(len(used) + 1, dtype=np.int64)
        np.cumsum(postings_per_term[used], out=indptr[1:])
        twin._segments = [
            Segment(
                indptr, new_position[main.slots].astype(np.int32), main.tf, None, np.ones(len(kept), dtype=np.bool_)
            )
        ]
        twin._lengths, twin._live = self._lengths[kept], np.ones(len(kept), dtype=np.bool_)
        twin._segment_of, twin._slot_of = np.zeros(len(kept), dtype=np.int32), np.arange(len(kept), dtype=np.int64)
        twin._norms = None
        return twin, kept

    def _terms(self) -> list[str]:
        """The vocabulary in term id order."""
        terms = [""] * len(self._vocab)
        for term, i in self._vocab.items():
            terms[i] = term
        return terms

    def _analyze(self, texts: Sequence[str], show_progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Concatenated term ids and lengths of ``texts``; new terms join the vocabulary."""
        vocab, analyze = self._vocab, self.analyzer.analyze
        term_ids: list[np.ndarray] = []
        lengths = np.zeros(len(texts), dtype=np.int32)
        items: Iterable[str] = tqdm(texts, desc="BM25 index", unit="doc", disable=not show_progress)
        for i, text in enumerate(items):
            if not isinstance(text, str):
                raise TypeError(f"text at position {i} is {type(text).__name__}, expected str")
            terms = analyze(text)
            for term in dict.fromkeys(terms):  # first-seen order keeps term ids reproducible
                if term not in vocab:
                    vocab[term] = len(vocab)
            term_ids.append(np.fromiter(map(vocab.__getitem__, terms), dtype=np.int32, count=len(terms)))
            lengths[i] = len(terms)
        flat = np.concatenate(term_ids) if term_ids else np.empty(0, dtype=np.int32)
        return flat, lengths

    # -- searches ---------------------------------------------------------------------------
    def _term_ids(self, query: str) -> list[int]:
        vocab = self._vocab
        return [vocab[t] for t in self.analyzer.analyze(query) if t in vocab]

    def _length_norms(self) -> np.ndarray:
        norms = self._norms
        if norms is None:
            avgdl = self._total_length / self._live_count
            norms = bm25_scoring.length_norms(self.method, self._lengths, avgdl, self.k1, self.b)
            self._norms = norms
        return norms

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of ``query`` for every position (float32; 0 where no term matches for most
        methods, and at removed positions)."""
        matched = self._match(query)
        return self._all_scores(matched) if matched is not None else np.zeros(len(self), dtype=np.float32)

    def search(self, query: str, top_k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Best ``top_k`` positions sharing a term with ``query`` and their scores, best first.

        ``allowed`` is an optional boolean mask over positions; others are never returned. Ties
        go to the lower position."""
        self._check_search(top_k, allowed)
        matched = self._match(query) if top_k else None
        if matched is None:
            return _EMPTY_POSITIONS, _EMPTY_SCORES
        return self._top(matched, top_k, allowed)

    def search_and_scores(
        self, query: str, top_k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`search` and :meth:`scores` from one pass over the query's postings (the exact hybrid needs both)."""
        self._check_search(top_k, allowed)
        matched = self._match(query)
        if matched is None:
            return _EMPTY_POSITIONS, _EMPTY_SCORES, np.zeros(len(self), dtype=np.float32)
        positions, top_scores = self._top(matched, top_k, allowed) if top_k else (_EMPTY_POSITIONS, _EMPTY_SCORES)
        return positions, top_scores, self._all_scores(matched)

    def _check_search(self, top_k: int, allowed: np.ndarray | None) -> None:
        if top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {top_k}")
        if allowed is not None:
            allowed = np.asarray(allowed)
            if allowed.dtype != np.bool_ or allowed.shape != (len(self),):
                raise ValueError(
                    f"allowed must be a boolean mask of shape ({len(self)},), "
                    f"got dtype {allowed.dtype} and shape {allowed.shape}"
                )

    def _match(self, query: str) -> _Match | None:
        """The query's summed postings (float64 totals per position), or None if no query term
        occurs in a live document."""
        term_ids = self._term_ids(query)
        if not term_ids or not self._live_count:
            return None
        repeats: dict[int, int] = {}
        for term in term_ids:  # a repeated query term counts again, as in bm25s
            repeats[term] = repeats.get(term, 0) + 1
        scored = self._scored_terms(list(repeats))
        found = [(hit, times) for t, times in repeats.items() if (hit := scored[t]) is not None]
        if not found:
            return None
        docs = np.concatenate([f[0].positions for f in found]) if len(found) > 1 else found[0][0].positions
        partial = np.concatenate([f[0].partial for f in found]) if len(found) > 1 else found[0][0].partial
        if any(times > 1 for _, times in found):
            partial = partial * np.repeat([times for _, times in found], [len(f.positions) for f, _ in found])
        missing = np.array([f.missing for f, times in found for _ in range(times)], dtype=np.float32)
        totals = np.bincount(docs, weights=partial, minlength=len(self))
        return _Match(docs, totals, float(missing.sum()))

    def _scored_terms(self, terms: list[int]) -> dict[int, _ScoredTerm | None]:
        """Each term's live postings with their partial scores (None: no live document has it).

        Scores depend on N and the average length, so they are computed at query time, in one
        vectorised pass over the postings of the terms not yet scored since the last write, and
        kept until the next one (most queries share frequent terms)."""
        cache, segments, n = self._cache, self._segments, self._live_count
        out: dict[int, _ScoredTerm | None] = {t: cache[t] for t in terms if t in cache}
        missed = [t for t in terms if t not in out]
        if not missed:
            return out
        positions, counts, df, scored_terms = [], [], [], []
        for term in missed:
            found = [p for p in (s.postings(term) for s in segments) if len(p[0])]
            term_df = sum(len(p[0]) for p in found)
            if not term_df:
                out[term] = None  # only in removed documents: unknown to a fresh build
                continue
            positions.append(found[0][0] if len(found) == 1 else np.concatenate([p[0] for p in found]))
            counts += [p[1] for p in found]
            df.append(term_df)
            scored_terms.append(term)
        if scored_terms:
            idfs = np.array([bm25_scoring.idf(self.method, d, n) for d in df])
            all_positions = positions[0] if len(positions) == 1 else np.concatenate(positions)
            tf = counts[0] if len(counts) == 1 else np.concatenate(counts)
            partial = bm25_scoring.partial_scores(
                self.method, tf, self._length_norms()[all_positions], np.repeat(idfs, df), self.k1
            )
            missing = bm25_scoring.nonoccurrence_of(self.method, idfs, self.k1)
            fresh = {
                term: _ScoredTerm(positions[i], piece, missing[i])
                for i, (term, piece) in enumerate(zip(scored_terms, np.split(partial, np.cumsum(df)[:-1]), strict=True))
            }
            out.update(fresh)
            if self._cached_postings + len(partial) > CACHE_POSTINGS:
                cache.clear()
                self._cached_postings = 0
            cache.update(fresh)
            self._cached_postings += len(partial)
        return out

    def _all_scores(self, matched: _Match) -> np.ndarray:
        out = matched.totals.astype(np.float32)
        if matched.nonoccurrence:
            out += matched.nonoccurrence
            out[~self._live] = 0.0
        return out

    def _top(self, matched: _Match, top_k: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        mask = np.zeros(len(self), dtype=np.bool_)
        mask[matched.docs] = True
        if allowed is not None:
            mask &= allowed
        candidates = np.flatnonzero(mask)
        candidate_scores = matched.totals[candidates]
        if len(candidates) > top_k:
            keep = np.argpartition(-candidate_scores, top_k - 1)[:top_k]
            # argpartition splits ties at the k-th score arbitrarily: take every tied candidate, then cut.
            threshold = candidate_scores[keep].min()
            keep = np.flatnonzero(candidate_scores >= threshold)
            candidates, candidate_scores = candidates[keep], candidate_scores[keep]
        order = np.lexsort((candidates, -candidate_scores))[:top_k]
        result_scores = (candidate_scores[order] + matched.nonoccurrence).astype(np.float32)
        return candidates[order].astype(np.int64), result_scores

    # -- files ------------------------------------------------------------------------------
    def write_files(self, directory: Path) -> None:
        """Merge the segments, then write the index files into the (new, empty) folder ``directory``."""
        self.merge()
        main = self._segments[0]
        meta = {
            "format_version": FORMAT_VERSION,
            "analyzer_version": ANALYZER_VERSION,
            "num_docs": len(self),
            "live_docs": self._live_count,
            "params": self.params,
        }
        terms = self._terms()
        (directory / VOCAB_FILE).write_text(json.dumps(terms, ensure_ascii=False), encoding="utf-8")
        # Terms that joined the vocabulary after the last merge (through a copy) have no postings here.
        indptr = np.concatenate([main.indptr, np.full(len(terms) + 1 - len(main.indptr), main.indptr[-1])])
        arrays = {
            "indptr": indptr,
            "positions": main.slots,
            "tf": main.tf,
            "lengths": self._lengths,
            "live": self._live,
        }
        for key, name in _FILES.items():
            np.save(directory / name, arrays[key], allow_pickle=False)
        fault_point("bm25_index.saving")
        (directory / META_FILE).write_text(json.dumps(meta, indent=2), encoding="utf-8")

    def save(self, directory: Path, **state: Any) -> None:
        """Write the index, its parameters and a checksum manifest (with ``state``) to
        ``directory``, replacing it atomically."""
        with write_index_directory(Path(directory), state) as tmp:
            self.write_files(tmp)

    @classmethod
    def load(cls, directory: Path, memory_map: bool = False) -> BM25Index:
        """Read an index written by :meth:`save`, after checking its files against their
        checksums; ``state`` holds what was saved with it. With ``memory_map`` the postings
        (never modified in place: writes go to new segments) are mapped from the files, so they
        live in the page cache, not the heap (2M passages: 765 -> 42 MiB of heap, same speed
        warm: docs/benchmarks/scale/scale.md); lengths and live flags, which removals change, are read."""
        directory = Path(directory)
        if not (directory / META_FILE).is_file():
            raise FileNotFoundError(f"no BM25 index at {directory}: {META_FILE} is missing")
        try:
            state = verified_state(directory)
        except IndexFilesError as error:
            raise ValueError(f"corrupt BM25 index at {directory}: {error}") from error
        # The checksums vouch that the files come from one save: no need to re-read every posting.
        index = cls.read_files(directory, memory_map=memory_map, check_postings=False)
        index.state = state
        return index

    @classmethod
    def read_files(cls, directory: Path, memory_map: bool = False, check_postings: bool = True) -> BM25Index:
        """Read the index files of ``directory`` (checked for consistency, not against checksums;
        ``check_postings`` also reads every posting to check it against the document lengths)."""
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
            raise ValueError(
                f"BM25 index at {directory} has format version {version}, this code reads version {FORMAT_VERSION}: rebuild it"
            )
        if meta.get("analyzer_version") != ANALYZER_VERSION:
            raise ValueError(
                f"BM25 index at {directory} was built with analyzer version {meta.get('analyzer_version')}, "
                f"this code analyzes text with version {ANALYZER_VERSION}: rebuild it"
            )
        try:
            index = cls(**params)
        except (TypeError, ValueError) as error:
            raise ValueError(f"corrupt BM25 index at {directory}: bad parameters {params!r} ({error})") from error
        vocab, arrays = _read_arrays(directory, memory_map)
        _check_consistent(directory, num_docs, vocab, arrays, check_postings)
        index._vocab = {term: i for i, term in enumerate(vocab)}
        index._segments = [Segment(arrays["indptr"], arrays["positions"], arrays["tf"], None, arrays["live"].copy())]
        index._lengths, index._live = arrays["lengths"], arrays["live"]
        index._segment_of, index._slot_of = np.zeros(num_docs, dtype=np.int32), np.arange(num_docs, dtype=np.int64)
        index._live_count = int(arrays["live"].sum())
        index._total_length = int(arrays["lengths"][arrays["live"]].sum())
        return index


_DTYPES = {"indptr": np.int64, "positions": np.int32, "tf": np.float32, "lengths": np.int32, "live": np.bool_}


_POSTINGS = ("indptr", "positions", "tf")  # read-only once written: safe to memory-map


def _read_arrays(directory: Path, memory_map: bool = False) -> tuple[list[str], dict[str, np.ndarray]]:
    try:
        vocab = json.loads((directory / VOCAB_FILE).read_text(encoding="utf-8"))
        arrays = {
            key: np.load(
                directory / name, allow_pickle=False, mmap_mode="r" if memory_map and key in _POSTINGS else None
            )
            for key, name in _FILES.items()
        }
    except (OSError, ValueError, EOFError) as error:
        raise ValueError(f"corrupt BM25 index at {directory}: {error}") from error
    if not isinstance(vocab, list) or not all(isinstance(t, str) for t in vocab):
        raise ValueError(f"corrupt BM25 index at {directory}: {VOCAB_FILE} is not a list of terms")
    for key, array in arrays.items():
        if array.dtype != _DTYPES[key] or array.ndim != 1:
            raise ValueError(
                f"corrupt BM25 index at {directory}: {_FILES[key]} holds {array.dtype} of shape {array.shape}"
            )
    return vocab, arrays


def _check_consistent(
    directory: Path, num_docs: int, vocab: list[str], arrays: dict[str, np.ndarray], check_postings: bool = True
) -> None:
    """Postings, lengths, vocabulary and document count must agree (a guard against files of
    different saves mixed together; the checksums catch damaged bytes). Without ``check_postings``
    only the shapes are compared, not every posting (linear in the index: seconds at 21M)."""
    indptr, positions, tf, lengths, live = (arrays[k] for k in ("indptr", "positions", "tf", "lengths", "live"))
    consistent = (
        len(indptr) == len(vocab) + 1
        and len(set(vocab)) == len(vocab)
        and len(lengths) == len(live) == num_docs
        and indptr[0] == 0
        and bool(np.all(np.diff(indptr) >= 0))
        and int(indptr[-1]) == len(positions) == len(tf)
    )
    if check_postings:
        # Each live document's term counts add up to its length; removed ones have no postings.
        consistent = consistent and (
            len(positions) == 0 or (int(positions.min()) >= 0 and int(positions.max()) < num_docs)
        )
        consistent = consistent and bool(
            np.array_equal(np.bincount(positions, weights=tf, minlength=num_docs), np.where(live, lengths, 0))
        )
    if not consistent:
        raise ValueError(f"corrupt BM25 index at {directory}: postings, vocabulary and document count disagree")
