"""Top-k retrieval accuracy of BM25, dense (zero-shot MiniLM) and the DPR hybrid on the full pool.

    python -m benchmarks.retrieval.retrieval_quality            # nq/dev and squad/dev, writes docs/benchmarks/retrieval/
    python -m benchmarks.retrieval.retrieval_quality --limit 100 --out /tmp/quick   # smoke run
    python -m benchmarks.retrieval.retrieval_quality --model models/dpr-minilm-multi/question_encoder \
        --passage-model bundled:all-MiniLM-L6-v2 --out docs/training/hybrid   # the default DPR pair
    python -m benchmarks.retrieval.retrieval_quality --from-json   # re-render docs/benchmarks/retrieval/ from its JSON

The pool (55,350 passages) is indexed once into a cached embedded store (vectors come from the
embedding cache that ``benchmarks/encoding/encode_pool.py`` fills). For the hybrid, λ is fitted on one
half of each dev set and reported on the other half (2-fold: both directions are reported);
BM25 and dense are reported on the same halves so the rows compare like with like.

Every top-k cell has its 95% bootstrap interval over questions and every system its paired
difference from dense (paired bootstrap, McNemar's exact p), from the first-hit ranks the JSON keeps.
``--from-json`` re-renders OUT/retrieval_quality.md (and the per-dataset reports) from
OUT/retrieval_quality.json without retrieving anything: give it the options of the original run,
which the report names as the command that produced the numbers."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document
from tqdm.auto import tqdm

from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.evaluation.eval_report import differences_table
from dpr_components.evaluation.intervals import (
    mcnemar,
    paired_bootstrap_difference,
    score_interval,
    supported_gain,
    supported_loss,
    wilson_interval,
)
from dpr_components.evaluation.metric_intervals import (
    WILSON_SUFFIX,
    IntervalSettings,
    difference_cell,
    hits_at,
    interval_cell,
    per_question_values,
    report_intervals,
    wilson_cells_note,
)
from dpr_components.evaluation.pool import pool_store
from dpr_components.evaluation.questions import load_questions
from dpr_components.evaluation.report import TABLE_KS, write_retrieval_report
from dpr_components.evaluation.retrieval_metrics import (
    RetrievalResult,
    answer_hits,
    first_hit_rank,
)
from dpr_components.evaluation.tables import table_header, table_row
from dpr_components.evaluation.templates import fill_template, sibling_template
from dpr_components.hybrid_fusion import rrf_scores
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
from haystack_integrations.components.embedders.dpr.question_embedder import QuestionEmbedder
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

KS = (1, 5, 20, 100)
FOLD_SYSTEMS = ("bm25", "dense", "hybrid", "rrf")
WILSON_MARK = "ʷ"
TEMPLATE = sibling_template(__file__, "retrieval_quality.md.template")


def wilson_note(labels: Sequence[str]) -> str:
    """What the marked cells are, for rows whose per-question ranks were not stored."""
    return (
        f"{WILSON_MARK} The JSON kept only the accuracies of {', '.join(labels)}, not its per-question ranks: "
        "its cells have a 95% Wilson score interval of the proportion (Wilson 1927) instead of a bootstrap over "
        "questions, and its difference from dense is not tested."
    )


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
    for q, emb in tqdm(
        list(zip(questions, embeddings, strict=True)), desc=f"Retrieving {path.parent.name}/{path.name}", unit="q"
    ):
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
        ranked = sorted(fused, key=lambda doc_id: fused[doc_id], reverse=True)[:100]
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
    halves = fold_halves(n)
    folds = []
    for fit_half, test_half in ((0, 1), (1, 0)):
        curve = lambda_curve([candidates[i] for i in halves[fit_half]])
        weight = best_weight(curve)
        test = halves[test_half]
        ranks = {
            "bm25": [bm25_ranks[i] for i in test],
            "dense": [dense_ranks[i] for i in test],
            "hybrid": [hybrid_rank(candidates[i], weight) for i in test],
            "rrf": [rrf_ranks[i] for i in test],
        }
        folds.append(
            {
                "fit_half": fit_half,
                "weight": weight,
                "n_test": len(test),
                **{system: _accuracy(system_ranks) for system, system_ranks in ranks.items()},
                "first_hit_ranks": ranks,
            }
        )
    full_weight = best_weight(lambda_curve(candidates))
    return {
        "dataset": name,
        "n_questions": n,
        "candidates_per_retriever": candidates_n,
        "pipeline_default_weight": default_weight,
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


def fold_halves(n: int) -> list[list[int]]:
    """The two halves of the 2-fold λ fit: one seeded permutation of the questions, cut in two."""
    order = np.random.default_rng(0).permutation(n)
    return [sorted(int(i) for i in order[: n // 2]), sorted(int(i) for i in order[n // 2 :])]


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
        for points in zip(*curves, strict=True)
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


def _accuracy(ranks: Sequence[int | None]) -> dict[int, float]:
    return {k: 100.0 * sum(1 for r in ranks if r is not None and r <= k) / max(len(ranks), 1) for k in KS}


def _by_k(accuracy: Mapping[Any, float]) -> dict[int, float]:
    """An accuracy per k with int keys (JSON stores them as strings)."""
    return {int(k): float(v) for k, v in accuracy.items()}


def _header() -> list[str]:
    return table_header(["system", *(f"top-{k}" for k in KS)], "l" + "r" * len(KS))


@dataclass(frozen=True)
class TableRow:
    """One system of a result table: its accuracy per k (percent), its number of questions and, when
    stored, its first-hit rank per question (then it gets bootstrap intervals and a paired difference)."""

    label: str
    accuracy: Mapping[int, float]
    n: int
    ranks: Sequence[int | None] | None


@dataclass(frozen=True)
class Verdict:
    """A difference from the reference row that its interval supports (``gain`` or ``loss``)."""

    label: str
    k: int
    kind: str


def interval_table(
    rows: Sequence[TableRow], reference: int, reference_name: str = "dense"
) -> tuple[list[str], list[Verdict], list[str]]:
    """Markdown lines of a table with intervals: every row's top-k cells, then each row minus the
    reference row (paired bootstrap and McNemar, when both have per-question ranks). Also returns the
    supported differences and the labels of the rows that could not be compared."""
    lines = _header()
    for row in rows:
        if row.ranks is not None:
            cells = [interval_cell(score_interval(hits_at(row.ranks, k)).scaled(100), name_method=True) for k in KS]
        else:
            cells = [interval_cell(wilson_interval(row.accuracy[k] / 100, row.n).scaled(100)) + WILSON_MARK for k in KS]
        lines.append(table_row([row.label, *cells]))
    base = rows[reference]
    verdicts: list[Verdict] = []
    untested = [row.label for i, row in enumerate(rows) if i != reference and (row.ranks is None or base.ranks is None)]
    if base.ranks is None:
        return lines, verdicts, untested
    for index, row in enumerate(rows):
        if index == reference or row.ranks is None:
            continue
        cells = []
        for k in KS:
            ours, theirs = hits_at(row.ranks, k), hits_at(base.ranks, k)
            difference = paired_bootstrap_difference(ours, theirs).scaled(100)
            cells.append(difference_cell(difference, mcnemar(ours, theirs)))
            if supported_gain(difference) or supported_loss(difference):
                verdicts.append(Verdict(row.label, k, "gain" if supported_gain(difference) else "loss"))
        lines.append(table_row([f"{row.label} − {reference_name}", *cells]))
    return lines, verdicts, untested


def fold_rows(result: Mapping[str, Any], fold: Mapping[str, Any], dense_label: str) -> list[TableRow]:
    """The rows of one 2-fold table. Ranks come from the fold when stored; an older JSON kept only the
    fold's accuracies, so the BM25, dense and RRF ranks are taken from the all-questions ranks on the
    fold's half (and used only if they give back the stored accuracies); the hybrid's cannot be."""
    stored = fold.get("first_hit_ranks") or {}
    test = fold_halves(int(result["n_questions"]))[1 - int(fold["fit_half"])]
    labels = {"bm25": "BM25", "dense": dense_label, "hybrid": f"hybrid (λ={fold['weight']:g})", "rrf": "RRF (k=60)"}
    rows = []
    for system in FOLD_SYSTEMS:
        accuracy = _by_k(fold[system])
        ranks = stored.get(system)
        if ranks is None and system in result["full"]:
            derived = [result["full"][system]["first_hit_ranks"][i] for i in test]
            matches = all(abs(_accuracy(derived)[k] - accuracy[k]) < 1e-9 for k in KS)
            ranks = derived if matches and len(derived) == int(fold["n_test"]) else None
        rows.append(TableRow(labels[system], accuracy, int(fold["n_test"]), ranks))
    return rows


def full_rows(result: Mapping[str, Any]) -> list[TableRow]:
    """The rows of the all-questions table, one per system of ``full``."""
    return [
        TableRow(name, _by_k(system["top_k_accuracy"]), int(system["n_questions"]), system["first_hit_ranks"])
        for name, system in result["full"].items()
    ]


def _verdict_sentence(where: str, verdicts: Sequence[Verdict]) -> str:
    """``where``: the supported gains and losses against dense, grouped by system."""
    parts = []
    for kind in ("gain", "loss"):
        by_label: dict[str, list[int]] = {}
        for verdict in verdicts:
            if verdict.kind == kind:
                by_label.setdefault(verdict.label, []).append(verdict.k)
        if by_label:
            listed = "; ".join(f"{label} at " + ", ".join(f"top-{k}" for k in ks) for label, ks in by_label.items())
            parts.append(f"supported {'gains' if kind == 'gain' else 'losses'} for {listed}")
    return f"{where}: " + (". Also ".join(parts) if parts else "no difference from dense is supported") + "."


def pipeline_weight(results: Sequence[Mapping[str, Any]]) -> float:
    """The λ fitted on all questions of all datasets: stored, or read from its row's name in older JSON."""
    for result in results:
        if "pipeline_default_weight" in result:
            return float(result["pipeline_default_weight"])
        for name in result["full"]:
            found = re.fullmatch(r"hybrid \(pipeline default λ=([0-9.e+-]+)\)", name)
            if found:
                return float(found.group(1))
    raise ValueError("the results name no pipeline-default λ")


def render(
    results: Sequence[Mapping[str, Any]],
    command: str,
    dense_name: str = "MiniLM zero-shot",
    rerendered_by: str | None = None,
) -> str:
    """The markdown report from results in their JSON form (as ``retrieval_quality.json`` stores them)."""
    produced = f"Produced by: `{command}`"
    if rerendered_by:
        produced += (
            f". Intervals added from the stored first-hit ranks, nothing retrieved again, by: `{rerendered_by}` "
            "(a model path names the model that was there when the numbers were measured)."
        )
    lines = [line for result in results for line in dataset_section(result, f"dense ({dense_name})")]
    # A top-k every question hit: its cell says Wilson, and the note says why.
    wilson = any(WILSON_SUFFIX in line for line in lines)
    values = {
        "dense_name": dense_name,
        "produced": produced,
        "default_weight": f"{pipeline_weight(results):g}",
        "wilson_cells_note": f" {wilson_cells_note()}" if wilson else "",
        "datasets": "\n".join(lines),
    }
    return fill_template(TEMPLATE, values)


def dataset_section(result: Mapping[str, Any], dense_label: str) -> list[str]:
    """One dataset: its two 2-fold tables, the all-questions table, what the intervals support, headroom
    and timings."""
    lines = ["", f"## {result['dataset']} ({result['n_questions']} questions)", ""]
    known: list[str] = []
    untested_folds = False
    for fold in result["folds"]:
        table, verdicts, untested = interval_table(fold_rows(result, fold, dense_label), FOLD_SYSTEMS.index("dense"))
        half = fold["fit_half"] + 1
        lines += [
            f"λ fitted on half {half} → λ = {fold['weight']:g}; reported on the other half ({fold['n_test']} questions):",
            "",
            *table,
            "",
        ]
        if untested:
            untested_folds = True
            lines += [wilson_note(untested), ""]
        known.append(_verdict_sentence(f"On the half not used to fit λ (λ fitted on half {half})", verdicts))
    lines += [
        "All questions (the hybrid rows use λ fitted on these questions, among others, so they are optimistic):",
        "",
    ]
    rows = full_rows(result)
    names = [row.label for row in rows]
    table, verdicts, _ = interval_table(rows, names.index("dense") if "dense" in names else 0)
    lines += table
    known.append(_verdict_sentence("On all questions (in-sample for the hybrid rows)", verdicts))
    return (
        lines
        + _supported_lines(known, untested_folds)
        + _headroom_lines(result.get("headroom"))
        + _timing_lines(result)
    )


def _supported_lines(known: list[str], untested_folds: bool) -> list[str]:
    """The list of what the intervals support, and what is not known."""
    lines = ["", "What the intervals support (a difference from dense whose interval excludes zero):", ""]
    lines += [f"- {sentence}" for sentence in known]
    if untested_folds:
        lines.append(
            "- Not known: whether the hybrid with λ fitted on the other half differs from dense; its "
            "per-question ranks were not stored, so that difference is not tested here."
        )
    return [*lines, "- Every other difference in these tables has an interval that contains zero: not a claim."]


def _headroom_lines(room: Mapping[str, Any] | None) -> list[str]:
    """The top-1 headroom sentence, when the result has one."""
    if not room:
        return []
    return [
        "",
        f"Top-1 headroom (all questions, in-sample): the best λ on the grid for top-1 alone gives "
        f"{room['best_top1']:.1f} (λ={room['best_top1_weight']:g}). Only dense puts an answer first for "
        f"{room['only_dense_first']:.1f}% of questions, only BM25 for {room['only_bm25_first']:.1f}%; "
        f"a per-question oracle picking the better of the two would reach {room['either_first']:.1f}.",
    ]


def _timing_lines(result: Mapping[str, Any]) -> list[str]:
    """Time per question of each system, and where the curves are."""
    timings = ", ".join(f"{k} {v:.1f}" for k, v in result["ms_per_question"].items())
    return ["", f"Time per question (ms): {timings}", "", f"Curves: `{result['slug']}/topk_accuracy.png`."]


def write_dataset_report(out: Path, result: Mapping[str, Any], command: str) -> None:
    """``<slug>/report.md`` (and its JSON and curves) beside retrieval_quality.md: every system with intervals,
    and each system's differences from dense."""
    systems = {name: RetrievalResult.from_dict(data) for name, data in result["full"].items()}
    # Dense first among the values: report_intervals takes the first system as the reference.
    values = {
        name: per_question_values(systems[name].first_hit_ranks, systems[name].max_k, {}, TABLE_KS)
        for name in sorted(systems, key=lambda name: name != "dense")
    }
    intervals = report_intervals(values, IntervalSettings())
    write_retrieval_report(
        out / result["slug"],
        systems,
        title=f"Top-k accuracy on {result['dataset']} (55,350-passage pool)",
        command=command,
        dataset_name=result["dataset"],
        extra_tables=[differences_table(intervals)] if intervals.differences else [],
        intervals=intervals,
    )


def write_outputs(
    out: Path,
    results: Sequence[Mapping[str, Any]],
    command: str,
    dense_name: str,
    rerendered_by: str | None = None,
) -> str:
    """Write the per-dataset reports and retrieval_quality.md from results in their JSON form."""
    report_command = command if rerendered_by is None else f"{command}\n# intervals added by:\n{rerendered_by}"
    for result in results:
        write_dataset_report(out, result, report_command)
    text = render(results, command, dense_name, rerendered_by)
    atomic_write_text(out / "retrieval_quality.md", text)
    return text


def _slug(model: str) -> str:
    return model.strip("/").replace("/", "_").replace(":", "_")


def _dense_name(args: argparse.Namespace) -> str:
    dense_name = "bundled all-MiniLM-L6-v2, zero-shot" if args.model == BUNDLED_MINILM else f"`{args.model}`"
    if args.passage_model:
        dense_name += f" with passages by `{args.passage_model}`"
    return dense_name


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=BUNDLED_MINILM, help="question encoder (and passage encoder by default)")
    parser.add_argument("--passage-model", help="passage encoder, when it differs from --model (a DPR pair)")
    parser.add_argument("--datasets", default="nq/dev.jsonl,squad/dev.jsonl")
    parser.add_argument("--candidates", type=int, default=2000, help="top-N of each retriever for the hybrid union")
    parser.add_argument("--limit", type=int, help="first N questions of each dataset")
    parser.add_argument("--store", default=None, help="store folder (default: cache dir)")
    parser.add_argument("--out", default="docs/benchmarks/retrieval")
    parser.add_argument("--reuse", action="store_true", help="reuse cached retrieval results of an earlier run")
    parser.add_argument(
        "--from-json",
        action="store_true",
        help="re-render OUT/retrieval_quality.md and the per-dataset reports from OUT/retrieval_quality.json "
        "(no retrieval); give the options of the run that measured them",
    )
    arguments = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(arguments)
    # --reuse only skips retrieval that was already done, --from-json re-renders: the recorded command leaves them out.
    module = ["python", "-m", "benchmarks.retrieval.retrieval_quality"]
    command = shlex.join([*module, *(a for a in arguments if a not in ("--reuse", "--from-json"))])
    out = Path(args.out)
    if args.from_json:
        stored = json.loads((out / "retrieval_quality.json").read_text(encoding="utf-8"))
        text = write_outputs(out, stored, command, _dense_name(args), rerendered_by=shlex.join([*module, *arguments]))
        print(text)
        return
    passage_model = args.passage_model or args.model
    default_store = "pool-minilm" if passage_model == BUNDLED_MINILM else f"pool-{_slug(passage_model)}"
    store = pool_store(passage_model, Path(args.store) if args.store else cache_dir() / "indexes" / default_store)
    names = args.datasets.split(",")
    retrieved = {name: _retrieved(store, args, name) for name in names}
    default_weight = pipeline_default_weight([r["candidates"] for r in retrieved.values()])
    results = []
    for name in names:
        result = summarise(name, retrieved[name], args.candidates, default_weight)
        result["slug"] = name.replace("/", "-").removesuffix(".jsonl")
        results.append({**result, "full": {k: v.to_dict() for k, v in result["full"].items()}})
    # Rendered from the JSON form, so a --from-json re-render writes the same report.
    serialisable = json.loads(json.dumps(results, default=str))
    atomic_write_text(out / "retrieval_quality.json", json.dumps(serialisable, indent=1))
    print(write_outputs(out, serialisable, command, _dense_name(args)))


if __name__ == "__main__":
    main()
