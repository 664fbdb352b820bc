"""Reader quality and latency: SQuAD dev with the gold passage, NQ (and SQuAD) dev end to end, qa pipeline latency.

    python -m benchmarks.reader.reader_benchmark --model models/reader-minilm     # writes docs/benchmarks/reader/reader.{md,json}
    python -m benchmarks.reader.reader_benchmark --model runs/reader-minilm/export --limit 20 --out runs/reader-bench
    python -m benchmarks.reader.reader_benchmark --from-json    # re-render docs/benchmarks/reader/reader.md from its JSON

(a) SQuAD dev (``squad/dev.jsonl``): the reader reads only the question's gold paragraph; EM/F1.
(b) NQ dev (``nq/dev.jsonl``) over the full 55,350-passage pool: the top k ∈ {1, 5, 10, 20}
    passages of BM25, dense and the hybrid go to the reader; exact match of its answer (DPR's
    end-to-end QA metric). Each passage is read independently (one encoder pass per passage), so
    the top 20 are read once and the answer for k is chosen among the first k by each of the
    reader's answer rankings (``passage``, ``combined``, and qa_fast.yml's, e.g. ``combined`` with a rank
    prior). Retrievers and λ are those of ``pipelines/qa_fast.yml``. The first ``--squad-open-limit``
    squad/dev questions are run the same way: a question style the rank prior was not chosen on.
(c) Latency of ``pipelines/qa_fast.yml`` per question (reader on the top 10 passages): p50/p95 of
    the whole pipeline and of each stage, after untimed warm-up questions.

Exact match cells carry their 95% Wilson score interval: the JSON keeps each cell's share of
questions and their number, not per-question answers, so differences between rows are not tested."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import torch
from haystack import Document
from tqdm.auto import tqdm

from benchmarks.common import cpu_name, latency_ms, log
from dpr_components.encoders.bf16_probe import bf16_enabled
from dpr_components.evaluation.answer_matching import has_answer
from dpr_components.evaluation.answer_metrics import exact_match
from dpr_components.evaluation.intervals import wilson_interval
from dpr_components.evaluation.metric_intervals import interval_cell
from dpr_components.evaluation.tables import table_header, table_row
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.reader_training.data import read_jsonl
from dpr_components.reader_training.evaluate import ReadingCase, evaluate_reader
from dpr_components.readers.model import load_reader
from dpr_components.readers.predict import ReadSettings, SpanPrediction, read
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.settings import data_dir

KS = (1, 5, 10, 20)
# Answer rankings compared (ReadSettings.ranking, rank_prior): DPR's best passage first, every
# passage's best span by P(passage) * P(span), and that times the retrieval-rank weight r^-α.
Ranking = tuple[str, float]
BASE_RANKINGS: tuple[Ranking, ...] = (("passage", 0.0), ("combined", 0.0))


def ranking_label(ranking: Ranking) -> str:
    name, prior = ranking
    return name if prior == 0 else f"{name} × rank^-{prior:g}"


QA_PIPELINE = Path("pipelines/qa_fast.yml")
PROTOCOL_NOTE = (
    "**Made before the selection protocol.** The reader's checkpoint (by its dev exact match), λ, the "
    "answer ranking, the rank prior and the length prior were chosen on these dev sets (nq/dev end to end, "
    "squad/dev with the gold paragraph), so the numbers are optimistic; `pipelines/qa_fast.yml` has changed since "
    "(its encoder and λ are now chosen on the selection splits of train). Under the protocol, choices are "
    "made on selection splits of NQ and SQuAD train and dev is reported once: `docs/training/selection.md`."
)
WILSON_NOTE = (
    "In square brackets after each exact match: its 95% Wilson score interval (Wilson 1927). This benchmark kept "
    "only each cell's exact match and its number of questions, not per-question answers, so a bootstrap over "
    "questions is not possible and differences between cells (rankings, retrievers, k) are not tested: no "
    "ranking, retriever or k is claimed better than another here. F1 is a mean of per-question scores and "
    "has no interval."
)


def em_cell(percent: float, n: int) -> str:
    """``53.1 [49.3, 56.9]``: an exact match (percent of ``n`` questions) with its Wilson interval."""
    return interval_cell(wilson_interval(percent / 100, int(n)).scaled(100))


def squad_gold(model: str, reader_settings: dict[str, Any], limit: int | None) -> dict[str, Any]:
    """(a) EM/F1 with the gold paragraph as the only passage."""
    reader, tokenizer = load_reader(model)
    questions = read_jsonl(data_dir() / "squad" / "dev.jsonl", limit)
    cases = [ReadingCase(q.question, q.answers, [q.gold]) for q in questions if q.gold is not None]
    start = time.perf_counter()
    scores = evaluate_reader(
        reader, tokenizer, cases, bf16=reader_settings["bf16"], progress=True, settings=_decoding(reader_settings)
    )
    return {
        "n": scores.n,
        "exact_match": scores.exact_match,
        "f1": scores.f1,
        "ms_per_question": 1000 * (time.perf_counter() - start) / scores.n,
    }


def _decoding(reader_settings: dict[str, Any]) -> ReadSettings:
    """Span decoding as in qa_fast.yml: its answer length limit and length prior."""
    return ReadSettings(
        max_answer_length=reader_settings["max_answer_length"],
        length_penalty=reader_settings.get("length_penalty") or 0.0,
    )


def qa_pipeline(model: str, store: Path, settings: dict[str, Any], top: int | None = None) -> Any:
    """``pipelines/qa_fast.yml`` on the pool store with the given reader (and hybrid depth, λ, ranking)."""
    overrides = [f"reader.model={model}", f"reader.precision={settings['precision']}"]
    if settings.get("weight") is not None:
        overrides.append(f"hybrid.weight={settings['weight']}")
    if settings.get("ranking") is not None:
        overrides.append(f"reader.ranking={settings['ranking']}")
    if settings.get("rank_prior") is not None:
        overrides.append(f"reader.rank_prior={settings['rank_prior']}")
    if settings.get("length_penalty") is not None:
        overrides.append(f"reader.length_penalty={settings['length_penalty']}")
    return load_pipeline(QA_PIPELINE, str(store), overrides + ([f"hybrid.top_k={top}"] if top else []))


def _retrieve(pipeline: Any, question: str, k: int) -> dict[str, list[Document]]:
    """Top-k documents of BM25, dense and the hybrid, from the qa pipeline's hybrid retriever and its store."""
    hybrid = pipeline.get_component("hybrid")
    out = hybrid.run(query=question, top_k=k)
    store = hybrid.document_store
    bm25 = store.bm25_retrieval(question, top_k=k)
    dense = store.embedding_retrieval(out["query_embedding"], top_k=k)
    return {"BM25": bm25, "dense": dense, "hybrid": out["documents"]}


def open_domain_end_to_end(
    model: str,
    store: Path,
    reader_settings: dict[str, Any],
    dataset: str,
    limit: int | None,
    rankings: tuple[Ranking, ...],
) -> dict[str, Any]:
    """(b) End-to-end exact match for each retriever, k and answer ranking."""
    pipeline = qa_pipeline(model, store, reader_settings, max(KS))
    reader, tokenizer = load_reader(model)
    settings = _decoding(reader_settings)
    questions = read_jsonl(data_dir() / dataset, limit)
    names = ("BM25", "dense", "hybrid")
    hits = {ranking_label(r): {name: {k: 0.0 for k in KS} for name in names} for r in rankings}
    answer_in_top = {name: {k: 0 for k in KS} for name in names}
    for q in tqdm(questions, desc=f"{dataset} end to end", unit="q"):
        ranked = _retrieve(pipeline, q.question, max(KS))
        union = list({d.id: d for docs in ranked.values() for d in docs}.values())
        predictions = read(
            reader,
            tokenizer,
            q.question,
            [(d.meta.get("title"), d.content or "") for d in union],
            settings=settings,
            bf16=reader_settings["bf16"],
        )
        best_of: dict[str, SpanPrediction] = {}
        for p in predictions:  # passage order: the first prediction of a passage is its best span
            best_of.setdefault(union[p.passage_index].id, p)
        for name, docs in ranked.items():
            for k in KS:
                for ranking in rankings:
                    # Each passage weighed by its rank in this retriever's list, as the reader would see it.
                    candidates = [
                        best_of[d.id].ranked_at(rank, ranking[1])
                        for rank, d in enumerate(docs[:k], start=1)
                        if d.id in best_of
                    ]
                    key = (lambda p: p.passage_rank_score) if ranking[0] == "passage" else (lambda p: p.score)
                    chosen = max(candidates, key=key, default=None)
                    hits[ranking_label(ranking)][name][k] += exact_match(chosen.text if chosen else None, q.answers)
                answer_in_top[name][k] += any(has_answer(q.answers, d.content or "") for d in docs[:k])
    n = len(questions)
    return {
        "dataset": dataset,
        "n": n,
        "questions": f"the first {n:,}" if limit is not None else f"all {n:,}",
        "exact_match": {
            ranking: {name: {k: 100 * v / n for k, v in by_k.items()} for name, by_k in by_name.items()}
            for ranking, by_name in hits.items()
        },
        "retrieval_top_k_accuracy": {
            name: {k: 100 * v / n for k, v in by_k.items()} for name, by_k in answer_in_top.items()
        },
    }


def latency(model: str, store: Path, settings: dict[str, Any], questions_n: int, warmup: int) -> dict[str, Any]:
    """(c) Per-question time of the qa pipeline (top 10 passages to the reader) and of its stages."""
    from dpr_components.pipeline_requests.inputs import request_inputs

    pipeline = qa_pipeline(model, store, settings)
    pipeline.warm_up()
    questions = [q.question for q in read_jsonl(data_dir() / "nq" / "dev.jsonl", questions_n + warmup)]
    stages: dict[str, list[float]] = {"pipeline": [], "hybrid retrieval": [], "reader (10 passages)": []}
    reader = pipeline.get_component("reader")
    for i, question in enumerate(tqdm(questions, desc="qa pipeline latency", unit="q")):
        t0 = time.perf_counter()
        pipeline.run(request_inputs(pipeline, query=question))
        t1 = time.perf_counter()
        documents = pipeline.get_component("hybrid").run(query=question)["documents"]
        t2 = time.perf_counter()
        reader.run(query=question, documents=documents)
        t3 = time.perf_counter()
        if i >= warmup:
            stages["pipeline"].append(t1 - t0)
            stages["hybrid retrieval"].append(t2 - t1)
            stages["reader (10 passages)"].append(t3 - t2)
    return {
        "n": len(questions) - warmup,
        "warmup": warmup,
        "stages": {k: latency_ms(v) for k, v in stages.items()},
        "reader_precision": "bf16" if reader.uses_bf16 else "fp32",
        "weight": pipeline.get_component("hybrid").weight,
        "ranking": reader.read_settings.ranking,
        "rank_prior": reader.read_settings.rank_prior,
        "qa_ranking": ranking_label((reader.read_settings.ranking, float(reader.read_settings.rank_prior))),
        "length_penalty": reader.read_settings.length_penalty,
    }


def render(result: dict[str, Any], rerendered_by: str | None = None) -> str:
    a, c = result["squad_gold"], result["latency"]
    qa_ranking = c["qa_ranking"]
    produced = f"Produced by: `{result['command']}` (run on {result['date']})"
    if rerendered_by:
        produced += f". Intervals added from the stored results, nothing measured again, by: `{rerendered_by}`"
    lines = [
        "# Span reader: reading comprehension, end-to-end QA, latency",
        "",
        PROTOCOL_NOTE,
        "",
        produced,
        "",
        f"Reader: `{result['model']}` ({result['model_info']}). Machine: {result['machine']}; torch threads "
        f"{result['torch_threads']}, reader precision {c['reader_precision']}. "
        "The machine is shared, so times are noisy.",
        "",
        f"Span decoding in every part as in `pipelines/qa_fast.yml`: answers of at most {result.get('max_answer_length', 10)} "
        f"tokens, length prior β = {c.get('length_penalty', 0.0):g} (a span of n tokens scores start + end logit − "
        "β(n−1); 0 is DPR's decoding).",
        "",
        WILSON_NOTE,
        "",
        f"## (a) SQuAD dev, gold paragraph given ({a['n']} questions)",
        "",
        *table_header(["exact match", "F1", "ms / question"], "rrr"),
        f"| {em_cell(a['exact_match'], a['n'])} | {a['f1']:.1f} | {a['ms_per_question']:.0f} |",
    ]
    for part, b in zip("bcdefgh", result["end_to_end"], strict=False):
        lines += [
            "",
            f"## ({part}) {b['dataset']} end to end over the pool ({b.get('questions', b['n'])} questions)",
            "",
            f"Retrievers as in `pipelines/qa_fast.yml` (its HybridRetriever: BM25 and dense top 100 each fused with "
            f"λ = {c['weight']:g}; BM25 and dense alone from the same store).",
            "",
            "Exact match (%) of the reader's answer from the top-k passages of each retriever "
            "(in parentheses: top-k retrieval accuracy, the share of questions with an answer among the passages "
            "read), for the reader's answer rankings: `passage` (DPR's: the best span of the passage the reader "
            "selects), `combined` (every passage's best span by P(passage) · P(span)) and `combined × rank^-α` "
            "(that times r^-α, r the passage's rank in the retriever's list); "
            f"`pipelines/qa_fast.yml` uses `{qa_ranking}`.",
            "",
            *table_header(["ranking", "retriever", *(f"k={k}" for k in KS)], "ll" + "r" * len(KS)),
        ]
        for ranking, by_name in b["exact_match"].items():
            for name, by_k in by_name.items():
                accuracy = b["retrieval_top_k_accuracy"][name]
                cells = (f"{em_cell(by_k[k], b['n'])} ({accuracy[k]:.0f})" for k in KS)
                lines.append(table_row([ranking, name, *cells]))
    lines += [
        "",
        f"## `pipelines/qa_fast.yml` latency per question ({c['n']} NQ dev questions, {c['warmup']} warm-up)",
        "",
        *table_header(["stage", "p50 ms", "p95 ms", "mean ms"], "lrrr"),
    ]
    lines += [f"| {k} | {v['p50_ms']:.0f} | {v['p95_ms']:.0f} | {v['mean_ms']:.0f} |" for k, v in c["stages"].items()]
    return "\n".join(lines) + "\n"


def _int_keys(value: Any) -> Any:
    """JSON turned the k of every ``{k: accuracy}`` into a string; turn them back."""
    if isinstance(value, dict):
        return {int(k) if isinstance(k, str) and k.isdigit() else k: _int_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_int_keys(v) for v in value]
    return value


def _model_info(model: str) -> str:
    path = Path(model) / "reader_info.json"
    if not path.is_file():
        return "no training record"
    info = json.loads(path.read_text(encoding="utf-8"))
    return f"trained {info.get('step')} steps, dev EM {info.get('dev_em', float('nan')):.1f} at selection"


def build_parser() -> argparse.ArgumentParser:
    """The command's options."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="models/reader-minilm", help="reader folder")
    parser.add_argument("--limit", type=int, help="first N questions of each dataset (smoke runs)")
    parser.add_argument("--latency-questions", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--max-answer-length", type=int, default=10)
    parser.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="auto")
    parser.add_argument("--weight", type=float, help="hybrid λ (default: the one in pipelines/qa_fast.yml)")
    parser.add_argument(
        "--store",
        default="indexes/pool",
        help="the pool indexed with the qa pipeline's passage encoder (haystack run pipelines/index.yml "
        "--input path=<data>/wiki/documents.jsonl --store indexes/pool)",
    )
    parser.add_argument("--ranking", choices=["passage", "combined"], help="reader ranking (default: qa_fast.yml's)")
    parser.add_argument("--rank-prior", type=float, help="reader rank prior α (default: qa_fast.yml's)")
    parser.add_argument("--length-penalty", type=float, help="reader length prior β (default: qa_fast.yml's)")
    parser.add_argument(
        "--squad-open-limit",
        type=int,
        default=500,
        help="first N squad/dev questions also run end to end (0: none), a second question style",
    )
    parser.add_argument("--out", default="docs/benchmarks/reader")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument(
        "--render-only",
        "--from-json",
        dest="render_only",
        action="store_true",
        help="rewrite OUT/reader.md from OUT/reader.json of an earlier run (no measuring)",
    )
    return parser


def main() -> None:
    parser = build_parser()
    args = parser.parse_args()
    if args.render_only:
        saved = _int_keys(json.loads((Path(args.out) / "reader.json").read_text(encoding="utf-8")))
        rerendered_by = "python -m benchmarks.reader.reader_benchmark " + shlex.join(sys.argv[1:])
        atomic_write_text(Path(args.out) / "reader.md", render(saved, rerendered_by))
        return
    if args.threads:
        torch.set_num_threads(args.threads)
    command = "python -m benchmarks.reader.reader_benchmark " + shlex.join(sys.argv[1:])
    store_path = Path(args.store)
    if not (store_path / "documents.sqlite").is_file():
        raise SystemExit(f"{store_path} holds no store: index the pool first (see --help)")
    bf16 = bf16_enabled(args.precision)
    reader_settings = {
        "bf16": bf16,
        "precision": args.precision,
        "max_answer_length": args.max_answer_length,
        "weight": args.weight,
        "ranking": args.ranking,
        "rank_prior": args.rank_prior,
        "length_penalty": args.length_penalty,
    }
    qa_reader = qa_pipeline(args.model, store_path, reader_settings).get_component("reader").read_settings
    reader_settings["length_penalty"] = qa_reader.length_penalty
    log("(a) SQuAD dev with the gold paragraph")
    squad = squad_gold(args.model, reader_settings, args.limit)
    log(f"(a) EM {squad['exact_match']:.1f} F1 {squad['f1']:.1f}")
    rankings = tuple(dict.fromkeys([*BASE_RANKINGS, (qa_reader.ranking, float(qa_reader.rank_prior))]))
    end_to_end = []
    squad_limit = args.squad_open_limit if args.limit is None else min(args.limit, args.squad_open_limit)
    for dataset, limit in [("nq/dev.jsonl", args.limit), ("squad/dev.jsonl", squad_limit)]:
        if limit == 0:
            continue
        log(f"{dataset} end to end")
        end_to_end.append(open_domain_end_to_end(args.model, store_path, reader_settings, dataset, limit, rankings))
    log("qa pipeline latency")
    n_latency = min(args.latency_questions, args.limit or args.latency_questions)
    lat = latency(args.model, store_path, reader_settings, n_latency, args.warmup)
    result = {
        "command": command,
        "model": args.model,
        "model_info": _model_info(args.model),
        "machine": f"{cpu_name()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "torch_threads": torch.get_num_threads(),
        "max_answer_length": args.max_answer_length,
        "squad_gold": squad,
        "end_to_end": end_to_end,
        "latency": lat,
        "date": time.strftime("%Y-%m-%d"),
    }
    out = Path(args.out)
    atomic_write_text(out / "reader.json", json.dumps(result, indent=1) + "\n")
    atomic_write_text(out / "reader.md", render(result))
    print(render(result))


if __name__ == "__main__":
    main()
