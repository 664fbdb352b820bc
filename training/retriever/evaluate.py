"""Top-k retrieval accuracy over the full pool (55,350 passages) of trained encoders, the
zero-shot bundled MiniLM or BM25, on dev question sets.

    python -m training.retriever.evaluate --system runs/dpr-nq/<run>/best --questions nq/dev.jsonl,squad/dev.jsonl \\
        --out runs/dpr-nq/<run>/eval.json
    python -m training.retriever.evaluate --system bm25 --questions nq/dev.jsonl --out runs/dpr-nq/baselines/bm25.json

--system is a training output folder (question_encoder/ + passage_encoder/), one encoder used
for both (e.g. bundled:all-MiniLM-L6-v2), or ``bm25``. Passage vectors are cached in
.cache/embeddings as they are computed, so an interrupted evaluation resumes. Retrieval is
exact inner product (the encoders' own normalisation applies); an answer counts if it occurs
in a passage's text (DPR's has_answer), or, with ``--match gold`` (the selection splits of
``training/common/selection_splits.py``), a passage counts if it was cut from one of the question's
``gold_ids`` documents. Each top-k accuracy comes with a 95% percentile-bootstrap interval over
questions (``top_k_interval``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from dpr_components.corpus.passages import Passage
from dpr_components.encoder_training.frozen_passages import check_same_vectors
from dpr_components.encoder_training.negatives import bm25_for, load_corpus_passages
from dpr_components.encoders.batch_encoding import cache_for, encode_passages_cached
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.pairing import encoder_models
from dpr_components.encoders.text_encoder import TextEncoder
from dpr_components.evaluation.intervals import score_interval
from dpr_components.evaluation.pipeline_eval import with_gold_ids
from dpr_components.evaluation.questions import QAExample, load_questions
from dpr_components.evaluation.retrieval_metrics import (
    RetrievalResult,
    answer_hits,
    first_hit_rank,
    gold_document_rank,
)
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.settings import cache_dir
from dpr_components.utils.sources import resolve_data_source

POOL = "wiki/documents.jsonl"
KS = (1, 5, 20, 100)
MATCH_HELP = (
    "answer: a passage holding an answer string (DPR's rule); gold: a passage of one of the question's "
    "gold_ids documents (the selection splits; questions without gold_ids are left out)"
)
MAX_K = 100


def pool_passages(limit: int | None = None) -> list[Passage]:
    passages = load_corpus_passages(resolve_data_source(POOL))
    return passages[:limit] if limit else passages


def _top_ids(questions: np.ndarray, passages: np.ndarray, k: int) -> np.ndarray:
    out = np.empty((len(questions), k), dtype=np.int64)
    for start in range(0, len(questions), 256):
        scores = questions[start : start + 256] @ passages.T
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
        out[start : start + 256] = np.take_along_axis(top, order, axis=1)
    return out


def same_vectors_encoder(
    own: str,
    same_as: str,
    passages: Sequence[Passage],
    precision: str = "auto",
    sample: int = 32,
    backend: str = "torch",
) -> TextEncoder:
    """The encoder of ``same_as`` after checking that it makes the vectors ``own`` makes on a sample of
    ``passages`` (a question-side run exports a copy of the passage encoder it kept fixed): then the
    pool's vectors cached for ``same_as`` are reused instead of encoding the pool again."""
    chosen = [passages[int(i)] for i in np.linspace(0, len(passages) - 1, min(sample, len(passages)))]
    try:
        check_same_vectors(own, same_as, [(p.title or None, p.text) for p in chosen])
    except ValueError as error:
        raise ValueError(f"--passage-model: {error}") from error
    return TextEncoder(EncoderSettings(model=same_as, precision=precision, backend=backend), batch_size=64)


class DenseSystem:
    def __init__(
        self,
        system: str,
        passages: Sequence[Passage],
        precision: str = "auto",
        passage_model: str | None = None,
        passage_backend: str = "torch",
    ) -> None:
        question_model, own_passage_model = encoder_models(system)
        self.questions = TextEncoder(EncoderSettings(model=question_model, precision=precision), batch_size=64)
        if passage_model is None:
            settings = EncoderSettings(model=own_passage_model, precision=precision, backend=passage_backend)
            encoder = TextEncoder(settings, batch_size=64)
        else:
            encoder = same_vectors_encoder(
                own_passage_model, passage_model, passages, precision, backend=passage_backend
            )
        self.vectors = encode_passages_cached(
            encoder,
            [p.text for p in passages],
            [p.title or None for p in passages],
            cache_for(encoder, cache_dir() / "embeddings"),
            show_progress=True,
        )

    def top(self, questions: Sequence[QAExample]) -> np.ndarray:
        vectors = self.questions.encode_questions([q.question for q in questions], show_progress=True)
        return _top_ids(vectors, self.vectors, MAX_K)


class BM25System:
    def __init__(self, passages: Sequence[Passage]) -> None:
        self.index = bm25_for(passages, cache_dir() / "training")

    def top(self, questions: Sequence[QAExample]) -> list[np.ndarray]:
        return [self.index.search(q.question, MAX_K)[0] for q in tqdm(questions, desc="BM25", unit="q")]


def hit_ranks(
    questions: Sequence[QAExample], top: Sequence[Sequence[int]], passages: Sequence[Passage], gold: bool
) -> list[int | None]:
    """First-hit rank of each question: by gold documents with ``gold``, else by answer matching."""
    if gold:
        return [
            gold_document_rank(q.gold_ids, [passages[int(i)].document_id for i in ids])
            for q, ids in zip(questions, top, strict=True)
        ]
    return [
        first_hit_rank(answer_hits(q.answers, [passages[int(i)].text for i in ids]))
        for q, ids in zip(questions, top, strict=True)
    ]


def accuracy_intervals(ranks: Sequence[int | None]) -> dict[str, list[float]]:
    """95% percentile-bootstrap interval of each top-k accuracy, over questions (the Wilson score
    interval where every question hits or every one misses, see ``score_interval``)."""
    intervals = {}
    for k in KS:
        interval = score_interval([1.0 if r is not None and r <= k else 0.0 for r in ranks]).scaled(100)
        intervals[str(k)] = [interval.low, interval.high]
    return intervals


def evaluate(
    system: str,
    question_files: Sequence[str],
    limit: int | None = None,
    precision: str = "auto",
    pool_limit: int | None = None,
    passage_model: str | None = None,
    gold: bool = False,
    passage_backend: str = "torch",
) -> dict[str, Any]:
    """Accuracy of ``system`` on each question file over the pool (its first ``pool_limit``
    passages only for quick checks: numbers are then not comparable). ``passage_model``: an encoder
    checked to make the same vectors as the system's passage encoder, whose cached pool vectors
    are reused. ``gold``: score by gold documents, leaving out questions without ``gold_ids``.
    ``passage_backend``: what runs the passage encoder (torch or openvino)."""
    passages = pool_passages(pool_limit)
    start = time.perf_counter()
    retriever: Any = (
        BM25System(passages)
        if system == "bm25"
        else DenseSystem(system, passages, precision, passage_model, passage_backend)
    )
    index_seconds = time.perf_counter() - start
    results: dict[str, Any] = {}
    for name in question_files:
        questions = load_questions(resolve_data_source(name), limit=limit)
        if gold:
            questions = with_gold_ids(questions, lambda line, name=name: print(f"{name}: {line}", file=sys.stderr))
        start = time.perf_counter()
        top = retriever.top(questions)
        ranks = hit_ranks(questions, top, passages, gold)
        result = RetrievalResult.from_ranks(ranks, max_k=MAX_K, question_ids=[q.id for q in questions])
        results[name] = {
            "n_questions": len(questions),
            "match": "gold passage" if gold else "answer",
            "top_k": {str(k): result.accuracy(k) for k in KS},
            "top_k_interval": accuracy_intervals(ranks),
            "mrr": result.mrr,
            "seconds": time.perf_counter() - start,
            "first_hit_ranks": ranks,
        }
        print(f"{system} on {name}: " + ", ".join(f"top-{k} {result.accuracy(k):.1f}" for k in KS), file=sys.stderr)
    return {
        "system": system,
        "pool_passages": len(passages),
        "precision": precision,
        "passage_backend": passage_backend,
        "index_seconds": index_seconds,
        "datasets": results,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--system", required=True, help="training output folder, encoder folder/bundled name, or bm25")
    parser.add_argument("--questions", default="nq/dev.jsonl", help="comma-separated question files")
    parser.add_argument("--limit", type=int, help="first N questions of each file")
    parser.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16"])
    parser.add_argument("--pool-limit", type=int, help="first N pool passages only (a quick check of the code path)")
    parser.add_argument(
        "--passage-model",
        help="reuse this encoder's cached pool vectors; it must make the same "
        "vectors as the system's passage encoder (checked), e.g. after question-side training",
    )
    parser.add_argument("--match", choices=["answer", "gold"], default="answer", help=MATCH_HELP)
    parser.add_argument(
        "--passage-backend",
        choices=["auto", "torch", "openvino"],
        default="torch",
        help="what runs the passage encoder (auto: OpenVINO where it passes the accuracy bound); the question side runs on torch",
    )
    parser.add_argument("--out", required=True, help="JSON result file")
    args = parser.parse_args(argv)
    result = evaluate(
        args.system,
        args.questions.split(","),
        args.limit,
        args.precision,
        args.pool_limit,
        args.passage_model,
        gold=args.match == "gold",
        passage_backend=args.passage_backend,
    )
    atomic_write_text(args.out, json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
