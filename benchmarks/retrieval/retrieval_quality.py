"""Top-k retrieval accuracy of BM25, dense (zero-shot MiniLM) and the DPR hybrid on the full pool.

    python -m benchmarks.retrieval.retrieval_quality            # nq/dev and squad/dev, writes docs/benchmarks/
    python -m benchmarks.retrieval.retrieval_quality --limit 100 --out /tmp/quick   # smoke run
    python -m benchmarks.retrieval.retrieval_quality --model models/dpr-minilm-multi/question_encoder \
        --passage-model bundled:all-MiniLM-L6-v2 --out docs/training/hybrid   # the default DPR pair

The pool (55,350 passages) is indexed once into a cached embedded store (vectors come from the
embedding cache that ``benchmarks/encoding/encode_pool.py`` fills). For the hybrid, λ is fitted on one
half of each dev set and reported on the other half (2-fold: both directions are reported);
BM25 and dense are reported on the same halves so the rows compare like with like."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np
from haystack import Document
from tqdm.auto import tqdm

from dpr_components.document_stores.embedded import EmbeddedDocumentStore
from dpr_components.embedders import QuestionEmbedder
from dpr_components.encoders.text_encoder import BUNDLED_MINILM
from dpr_components.evaluation.pool import pool_store
from dpr_components.evaluation.questions import load_questions
from dpr_components.evaluation.report import write_retrieval_report
from dpr_components.evaluation.retrieval_metrics import (
    RetrievalResult,
    answer_hits,
    first_hit_rank,
)
from dpr_components.evaluation.tables import table_header, table_row
from dpr_components.rankers.hybrid import rrf_scores
from dpr_components.rankers.hybrid_fit import (
    Candidates,
    best_weight,
    collect_candidates,
    lambda_curve,
    union_from_lists,
)
from dpr_components.rankers.hybrid_fit import (
    hybrid_first_hit_rank as hybrid_rank,
)
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.settings import cache_dir, data_dir

KS = (1, 5, 20, 100)


def _rank_in(documents: list[Document], answers: list[str], max_k: int = 100) -> int | None:
    return first_hit_rank(answer_hits(answers, [d.content or "" for d in documents[:max_k]]))


def retrieve_dataset(
    store: EmbeddedDocumentStore, model: str, path: Path, candidates_n: int, limit: int | None
) -> dict:
    """Ranks of the first answer-bearing passage for BM25, dense and RRF, and the hybrid candidates."""
    questions = load_questions(str(path), limit=limit)
    encoder = QuestionEmbedder(model=model).encoder
    start = time.perf_counter()
    embeddings = encoder.encode_questions([q.question for q in questions], show_progress=True)
    encode_seconds = time.perf_counter() - start
    bm25_ranks, dense_ranks, rrf_ranks, candidates = [], [], [], []
    bm25_seconds = dense_seconds = 0.0
    for q, emb in tqdm(list(zip(questions, embeddings)), desc=f"Retrieving {path.parent.name}/{path.name}", unit="q"):
        t0 = time.perf_counter()
        bm25 = store.bm25_retrieval(q.question, candidates_n)
        t1 = time.perf_counter()
        dense = store.embedding_retrieval(emb, candidates_n)
        t2 = time.perf_counter()
        bm25_seconds += t1 - t0
        dense_seconds += t2 - t1
        bm25_ranks.append(_rank_in(bm25, q.answers))
        dense_ranks.append(_rank_in(dense, q.answers))
        fused = rrf_scores([[d.id for d in bm25], [d.id for d in dense]], 60)
        by_id = {d.id: d for d in [*bm25, *dense]}
        ranked = sorted(fused, key=fused.get, reverse=True)[:100]
        rrf_ranks.append(_rank_in([by_id[i] for i in ranked], q.answers))
        candidates.append(collect_candidates(union_from_lists(store, q.question, emb, bm25, dense), q.answers))
    n = len(questions)
    return {
        "n": n,
        "bm25_ranks": bm25_ranks,
        "dense_ranks": dense_ranks,
        "rrf_ranks": rrf_ranks,
        "candidates": candidates,
        "ms_per_question": {
            "question encoding (batched)": 1000 * encode_seconds / n,
            f"bm25 top-{candidates_n}": 1000 * bm25_seconds / n,
            f"dense flat top-{candidates_n}": 1000 * dense_seconds / n,
        },
    }


def summarise(name: str, retrieved: dict, candidates_n: int, default_weight: float) -> dict:
    """2-fold λ fitting and the result tables of one dataset."""
    n, candidates = retrieved["n"], retrieved["candidates"]
    bm25_ranks, dense_ranks, rrf_ranks = retrieved["bm25_ranks"], retrieved["dense_ranks"], retrieved["rrf_ranks"]
    order = np.random.default_rng(0).permutation(n)
    halves = [sorted(order[: n // 2]), sorted(order[n // 2 :])]
    folds = []
    for fit_half, test_half in ((0, 1), (1, 0)):
        curve = lambda_curve([candidates[i] for i in halves[fit_half]])
        weight = best_weight(curve)
        test = halves[test_half]
        folds.append(
            {
                "fit_half": fit_half,
                "weight": weight,
                "n_test": len(test),
                "bm25": _accuracy([bm25_ranks[i] for i in test]),
                "dense": _accuracy([dense_ranks[i] for i in test]),
                "hybrid": _accuracy([hybrid_rank(candidates[i], weight) for i in test]),
                "rrf": _accuracy([rrf_ranks[i] for i in test]),
            }
        )
    full_weight = best_weight(lambda_curve(candidates))
    return {
        "dataset": name,
        "n_questions": n,
        "candidates_per_retriever": candidates_n,
        "full": {
            "bm25": RetrievalResult.from_ranks(bm25_ranks, max_k=100),
            "dense": RetrievalResult.from_ranks(dense_ranks, max_k=100),
            "rrf": RetrievalResult.from_ranks(rrf_ranks, max_k=100),
            "hybrid (λ fitted on all, optimistic)": RetrievalResult.from_ranks(
                [hybrid_rank(c, full_weight) for c in candidates], max_k=100
            ),
            f"hybrid (pipeline default λ={default_weight:g})": RetrievalResult.from_ranks(
                [hybrid_rank(c, default_weight) for c in candidates], max_k=100
            ),
        },
        "weight_fitted_on_all": full_weight,
        "folds": folds,
        "headroom": top1_headroom(candidates, bm25_ranks, dense_ranks),
        "ms_per_question": retrieved["ms_per_question"],
    }


def top1_headroom(candidates: list[Candidates], bm25_ranks: list, dense_ranks: list) -> dict:
    """How much a fusion of the two retrievers could add at top-1: the best top-1 anywhere on the
    λ grid (in-sample) and, per question, which retriever alone puts an answer first."""
    curve = lambda_curve(candidates, ks=(1,))
    best = max(curve, key=lambda p: (p["top_k"][1], -p["weight"]))
    dense_first = np.array([r == 1 for r in dense_ranks])
    bm25_first = np.array([r == 1 for r in bm25_ranks])
    return {
        "best_top1": best["top_k"][1],
        "best_top1_weight": best["weight"],
        "only_dense_first": 100.0 * float((dense_first & ~bm25_first).mean()),
        "only_bm25_first": 100.0 * float((bm25_first & ~dense_first).mean()),
        "either_first": 100.0 * float((dense_first | bm25_first).mean()),
    }


def pipeline_default_weight(datasets: list[list]) -> float:
    """One λ for the shipped pipelines: best on the datasets' average curve, so each dataset
    counts equally however many questions it has."""
    curves = [lambda_curve(candidates) for candidates in datasets]
    averaged = [
        {
            "weight": points[0]["weight"],
            "top_k": {k: float(np.mean([p["top_k"][k] for p in points])) for k in points[0]["top_k"]},
        }
        for points in zip(*curves)
    ]
    return best_weight(averaged)


def _retrieved(store: EmbeddedDocumentStore, args: argparse.Namespace, name: str) -> dict:
    """Retrieval results of one dataset, cached (as JSON) so that re-rendering does not retrieve again."""
    key = f"{name.replace('/', '-')}-{args.candidates}-{args.limit}-{args.model.replace('/', '_').replace(':', '_')}"
    cached = cache_dir() / "retrieval_quality" / f"{key}.json"
    if args.reuse and cached.is_file():
        return _retrieved_from_json(json.loads(cached.read_text(encoding="utf-8")))
    retrieved = retrieve_dataset(store, args.model, data_dir() / name, args.candidates, args.limit)
    atomic_write_text(cached, json.dumps(_retrieved_to_json(retrieved)))
    return retrieved


def _retrieved_to_json(retrieved: dict) -> dict:
    candidates = [
        {"bm25": c.bm25.tolist(), "dense": c.dense.tolist(), "hits": c.hits.tolist()} for c in retrieved["candidates"]
    ]
    return {**retrieved, "candidates": candidates}


def _retrieved_from_json(data: dict) -> dict:
    candidates = [
        Candidates(
            bm25=np.array(c["bm25"], dtype=np.float64),
            dense=np.array(c["dense"], dtype=np.float64),
            hits=np.array(c["hits"], dtype=bool),
        )
        for c in data["candidates"]
    ]
    return {**data, "candidates": candidates}


def _accuracy(ranks: list[int | None]) -> dict[int, float]:
    return {k: 100.0 * sum(1 for r in ranks if r is not None and r <= k) / max(len(ranks), 1) for k in KS}


def _row(name: str, acc: dict[int, float]) -> str:
    return table_row([name, *(f"{acc[k]:.1f}" for k in KS)])


def _header() -> list[str]:
    return table_header(["system", *(f"top-{k}" for k in KS)])


def render(results: list[dict], command: str, default_weight: float, dense_name: str = "MiniLM zero-shot") -> str:
    lines = [
        f"# Retrieval accuracy on the pool: BM25, dense ({dense_name}), hybrid",
        "",
        "Pool: the shared Wikipedia pool split into DPR passages (55,350 passages of at most 100 words).",
        "Top-k accuracy: percent of questions with a passage containing an answer among the top k "
        "(DPR's answer matching on the passage text). BM25: Lucene-style scoring, k1=0.9, b=0.4, "
        f"title + text indexed. Dense: {dense_name}, exact inner-product search. "
        "Hybrid: the DPR paper's BM25 + λ·sim over the union of both top-N lists, both scores exact.",
        "",
        f"Produced by: `{command}`",
        "",
        f"**Pipeline default λ = {default_weight:g}**: fitted on all questions of the datasets below, each dataset "
        "weighted equally (maximising the mean of top-1, top-5 and top-20 accuracy); `pipelines/search.yml` and "
        "`pipelines/qa.yml` use it. The per-dataset tables fit λ on one half and report on the other.",
    ]
    for result in results:
        lines += ["", f"## {result['dataset']} ({result['n_questions']} questions)", ""]
        for fold in result["folds"]:
            lines += [
                f"λ fitted on half {fold['fit_half'] + 1} → λ = {fold['weight']:g}; "
                f"reported on the other half ({fold['n_test']} questions):",
                "",
                *_header(),
                _row("BM25", fold["bm25"]),
                _row(f"dense ({dense_name})", fold["dense"]),
                _row(f"hybrid (λ={fold['weight']:g})", fold["hybrid"]),
                _row("RRF (k=60)", fold["rrf"]),
                "",
            ]
        lines += ["All questions (the hybrid row uses λ fitted on all of them, so it is optimistic):", ""]
        lines += _header()
        lines += [_row(name, {k: r.accuracy(k) for k in KS}) for name, r in result["full"].items()]
        room = result["headroom"]
        lines += [
            "",
            f"Top-1 headroom (all questions, in-sample): the best λ on the grid for top-1 alone gives "
            f"{room['best_top1']:.1f} (λ={room['best_top1_weight']:g}). Only dense puts an answer first for "
            f"{room['only_dense_first']:.1f}% of questions, only BM25 for {room['only_bm25_first']:.1f}%; "
            f"a per-question oracle picking the better of the two would reach {room['either_first']:.1f}.",
        ]
        lines += [
            "",
            "Time per question (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in result["ms_per_question"].items()),
        ]
        lines += ["", f"Curves: `retrieval/{result['slug']}/topk_accuracy.png`."]
    return "\n".join(lines) + "\n"


def _slug(model: str) -> str:
    return model.strip("/").replace("/", "_").replace(":", "_")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=BUNDLED_MINILM, help="question encoder (and passage encoder by default)")
    parser.add_argument("--passage-model", help="passage encoder, when it differs from --model (a DPR pair)")
    parser.add_argument("--datasets", default="nq/dev.jsonl,squad/dev.jsonl")
    parser.add_argument("--candidates", type=int, default=2000, help="top-N of each retriever for the hybrid union")
    parser.add_argument("--limit", type=int, help="first N questions of each dataset")
    parser.add_argument("--store", default=None, help="store folder (default: cache dir)")
    parser.add_argument("--out", default="docs/benchmarks")
    parser.add_argument("--reuse", action="store_true", help="reuse cached retrieval results of an earlier run")
    args = parser.parse_args()
    # --reuse only skips retrieval that was already done: the recorded command leaves it out.
    command = shlex.join(
        ["python", "-m", "benchmarks.retrieval.retrieval_quality", *(a for a in sys.argv[1:] if a != "--reuse")]
    )
    passage_model = args.passage_model or args.model
    default_store = "pool-minilm" if passage_model == BUNDLED_MINILM else f"pool-{_slug(passage_model)}"
    store = pool_store(passage_model, Path(args.store) if args.store else cache_dir() / "indexes" / default_store)
    dense_name = "bundled all-MiniLM-L6-v2, zero-shot" if args.model == BUNDLED_MINILM else f"`{args.model}`"
    if args.passage_model:
        dense_name += f" with passages by `{args.passage_model}`"
    out = Path(args.out)
    names = args.datasets.split(",")
    retrieved = {name: _retrieved(store, args, name) for name in names}
    default_weight = pipeline_default_weight([r["candidates"] for r in retrieved.values()])
    results = []
    for name in names:
        result = summarise(name, retrieved[name], args.candidates, default_weight)
        result["slug"] = name.replace("/", "-").removesuffix(".jsonl")
        write_retrieval_report(
            out / "retrieval" / result["slug"],
            result["full"],
            title=f"Top-k accuracy on {name} (55,350-passage pool)",
            command=command,
            dataset_name=name,
        )
        results.append(result)
    atomic_write_text(out / "retrieval_quality.md", render(results, command, default_weight, dense_name))
    serialisable = [{**r, "full": {k: v.to_dict() for k, v in r["full"].items()}} for r in results]
    atomic_write_text(out / "retrieval_quality.json", json.dumps(serialisable, indent=1, default=str))
    print((out / "retrieval_quality.md").read_text())


if __name__ == "__main__":
    main()
