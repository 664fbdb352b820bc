"""Retrieval accuracy against a sampled passage pool: the cheap evaluation of the ablations.

    python -m training.retriever.sampled_pool_eval --system runs/dpr-nq/<run>/best --out runs/dpr-nq/<run>/sampled_eval.json
    python -m training.retriever.sampled_pool_eval --system bundled:all-MiniLM-L6-v2 --out runs/dpr-nq/baselines/sampled-minilm.json

Re-encoding the full pool costs 15-30 minutes per model on two cores, too much for a dozen
ablation runs. Here every question of the dev file (with BM25 negatives, as mined by the
recipe) is scored against one fixed candidate set: each question's gold passage, its first
``hard_negatives`` BM25 negatives and ``pool_size`` passages sampled from the pool (seeded).
It is DPR's validation protocol at a larger size. The gold passages are always present, so
the numbers are higher than over the full pool and comparable only with each other."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from dpr_components.dpr_data.examples import Ctx
from dpr_components.dpr_data.loading import load_training_examples
from dpr_components.encoder_training.model import BiEncoder
from dpr_components.encoder_training.negatives import load_corpus_passages
from dpr_components.encoder_training.validation import (
    ValidationSet,
    build_validation_set,
    validate,
)
from dpr_components.encoders.pairing import encoder_models
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.sources import resolve_data_source
from dpr_components.utils.threads import thread_count_option
from training.retriever.evaluate import POOL

DEV = "runs/dpr-nq/data/nq-dev-bm25.jsonl"
POOL_SIZE = 10_000
HARD_NEGATIVES = 5


def candidate_set(
    dev: str = DEV, pool_size: int = POOL_SIZE, hard_negatives: int = HARD_NEGATIVES, corpus_file: str = POOL
) -> ValidationSet:
    """All questions of ``dev`` with their fixed candidate passages (seed 0)."""
    examples = load_training_examples(resolve_data_source(dev)).examples
    corpus = [Ctx(p.title, p.text) for p in load_corpus_passages(resolve_data_source(corpus_file))]
    return build_validation_set(examples, len(examples), hard_negatives, corpus, pool_size, seed=0)


def evaluate_sampled(
    system: str, data: ValidationSet, similarity: str = "cosine", threads: int | None = None
) -> dict[str, Any]:
    """Average rank, MRR and top-k of ``system`` (a training output folder or one encoder)."""
    if threads:
        torch.set_num_threads(threads)
    question_model, passage_model = encoder_models(system)
    model = BiEncoder.from_pretrained(question_model, passage_model=passage_model, bf16=True)
    start = time.perf_counter()
    metrics = validate(model, data, score=similarity)
    return {
        "system": system,
        "similarity": similarity,
        "questions": len(data.questions),
        "candidates": len(data.passages),
        "seconds": time.perf_counter() - start,
        "metrics": metrics,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--system", required=True, help="training output folder, or one encoder for both sides")
    parser.add_argument("--dev", default=DEV, help="dev questions with gold passages and BM25 negatives")
    parser.add_argument("--similarity", default="cosine", choices=["dot", "cosine", "l2"])
    parser.add_argument("--corpus", default=POOL, help="the passage pool to sample from")
    parser.add_argument("--pool-size", type=int, default=POOL_SIZE)
    parser.add_argument("--threads", type=thread_count_option)
    parser.add_argument("--out", required=True, help="JSON result file")
    args = parser.parse_args(argv)
    try:
        result = evaluate_sampled(
            args.system, candidate_set(args.dev, args.pool_size, corpus_file=args.corpus), args.similarity, args.threads
        )
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    atomic_write_text(Path(args.out), json.dumps(result, indent=1))
    print(json.dumps(result["metrics"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
