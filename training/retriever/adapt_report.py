"""The measured effect of an adaptation (``haystack run adapt``): the adapted question encoder against a
baseline encoder on the selection splits, by gold-passage hits, dense top-1/5/20 over the pool with the
store's passage vectors as they are, each with its 95% bootstrap interval and the adapted minus the
baseline with its paired-bootstrap interval and McNemar's exact p::

    python -m training.retriever.adapt_report --run runs/adapted \\
        --baseline bundled:dpr-minilm-multi/question_encoder --passage-model bundled:all-MiniLM-L6-v2 \\
        --questions data/selection/nq-train-selection.jsonl,data/selection/squad-train-selection.jsonl \\
        --store indexes/pool --eval-dir runs/adapt-eval --out docs/training/adaptation_dpr_ict

With ``--store``, each encoder searches that store as it is (``DenseRetriever``: its index and passage
vectors, as a served pipeline does); without it, each is scored by ``training.retriever.evaluate``, which
encodes the pool again (its vectors cached). Each result is kept in ``--eval-dir`` and read back when the
same command is run again; the comparison is ``training.retriever.compare``'s. ``--match answer`` counts a
passage holding an answer instead (the paper's top-k accuracy), for the dev files, which name no gold id::

    python -m training.retriever.adapt_report --run runs/adapted --store indexes/pool --match answer \\
        --questions nq/dev.jsonl,squad/dev.jsonl --eval-dir runs/adapt-eval-dev --out docs/training/adaptation_dev

Writes ``<out>.json`` (the numbers, the run's report, the command) and ``<out>.md``."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dpr_components.evaluation.intervals import mcnemar, paired_bootstrap_difference, score_interval
from dpr_components.evaluation.metric_intervals import hits_at
from dpr_components.utils.atomic_files import atomic_write_text
from training.retriever.compare import INTERVALS_NOTE, dataset_table

KS = (1, 5, 20)
Evaluate = Callable[..., dict[str, Any]]


def scored(
    name: str,
    system: str,
    questions: Sequence[str],
    passage_model: str,
    folder: Path,
    evaluate: Evaluate,
    gold: bool = True,
) -> dict[str, Any]:
    """``training.retriever.evaluate``'s result for ``system`` (gold hits, or answer matching when not ``gold``),
    kept as ``folder/<name>.json``."""
    path = folder / f"{name}.json"
    if path.is_file():
        kept = json.loads(path.read_text(encoding="utf-8"))
        same_questions = list(kept.get("datasets", {})) == list(questions)
        if kept.get("system") == system and same_questions and kept.get("gold", True) == gold:
            return kept
    result = {**evaluate(system, list(questions), passage_model=passage_model, gold=gold), "gold": gold}
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(result, indent=1))
    return result


def _interval(values: list[float]) -> dict[str, float]:
    interval = score_interval(values).scaled(100)
    return {"estimate": interval.estimate, "low": interval.low, "high": interval.high}


def dataset_numbers(baseline: Sequence[int | None], adapted: Sequence[int | None]) -> dict[str, Any]:
    """Top-k of both encoders with intervals and the paired difference (adapted − baseline), per k."""
    if len(baseline) != len(adapted):
        raise ValueError(f"the two evaluations hold different numbers of questions: {len(baseline)}, {len(adapted)}")
    numbers: dict[str, Any] = {"questions": len(baseline)}
    for k in KS:
        ours, reference = hits_at(adapted, k), hits_at(baseline, k)
        difference = paired_bootstrap_difference(ours, reference).scaled(100).interval
        numbers[f"top_{k}"] = {
            "baseline": _interval(reference),
            "adapted": _interval(ours),
            "difference": {"estimate": difference.estimate, "low": difference.low, "high": difference.high},
            "mcnemar_p": mcnemar(ours, reference).p_value,
        }
    return numbers


def cost_per_10k(adaptation: dict[str, Any]) -> float:
    """The run's minutes scaled to 10,000 pseudo-queries (one a passage): scoring and training both grow with them."""
    queries = max(1, int(adaptation["passages"]["pseudo_queries"]))
    return round(float(adaptation["minutes"]["total"]) * 10_000 / queries, 1)


def report(
    run: Path, evaluations: dict[str, dict[str, Any]], command: str, gold: bool = True
) -> tuple[dict[str, Any], str]:
    """The JSON data and the markdown of the comparison (by gold-passage hits, or by answer matching)."""
    adaptation = json.loads((run / "adaptation.json").read_text(encoding="utf-8"))
    queries = adaptation["passages"]["pseudo_queries"]
    cost = cost_per_10k(adaptation)
    data: dict[str, Any] = {
        "command": command,
        "adaptation": adaptation,
        "minutes_per_10k_passages": cost,
        "match": "gold passage" if gold else "answer",
        "datasets": {},
    }
    lines = [
        "# Adapting the question encoder to the pool's passages (haystack run adapt)",
        "",
        f"Produced by: `{command}`",
        "",
        f"The run: {queries} pseudo-queries "
        f"({adaptation['settings'].get('query_method')}) from {adaptation['passages']['in_store']} passages, "
        f"{adaptation['training']['steps']} training steps, {adaptation['minutes']['total']} minutes on this "
        f"machine: {cost} minutes per 10,000 passages (one pseudo-query each).",
        "",
        INTERVALS_NOTE,
        "",
    ]
    for dataset, result in evaluations["baseline"]["datasets"].items():
        ranks = [evaluations[name]["datasets"][dataset]["first_hit_ranks"] for name in ("baseline", "adapted")]
        data["datasets"][dataset] = dataset_numbers(ranks[0], ranks[1])
        match = "gold passage hits" if gold else "a passage holding an answer (the paper's top-k accuracy)"
        lines += [f"## {dataset} ({result['n_questions']} questions, {match})", ""]
        lines += [*dataset_table(["baseline", "adapted"], ranks, KS), ""]
    return data, "\n".join(lines)


def store_evaluation(store: str) -> Evaluate:
    """An ``Evaluate`` that searches the store ``store`` as it is (``DenseRetriever``: its FAISS index, its
    passage vectors, the pairing check) and ranks each question's top 20 by gold document (``gold``) or by the
    first passage holding an answer, with the shape of ``training.retriever.evaluate``'s result;
    ``passage_model`` is the store's own, so it is not used."""

    def evaluate(system: str, questions: list[str], passage_model: str, gold: bool) -> dict[str, Any]:  # noqa: ARG001
        from tqdm.auto import tqdm

        from dpr_components.evaluation.pipeline_eval import with_gold_ids
        from dpr_components.evaluation.questions import load_questions
        from dpr_components.evaluation.retrieval_metrics import first_hit_rank_for, gold_document_rank
        from dpr_components.utils.sources import resolve_data_source
        from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever
        from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

        retriever = DenseRetriever(document_store=EmbeddedDocumentStore(path=store), model=system, top_k=max(KS))
        retriever.warm_up()
        datasets: dict[str, Any] = {}
        for name in questions:
            loaded = load_questions(resolve_data_source(name))
            if gold:
                loaded = with_gold_ids(loaded, lambda line: print(line, file=sys.stderr))
            ranks = []
            for question in tqdm(loaded, desc=f"{Path(system).name} on {Path(name).name}", unit="q"):
                found = retriever.run(query=question.question)["documents"]
                if gold:
                    ids = [str(d.meta.get("document_id", d.id)) for d in found]
                    ranks.append(gold_document_rank(question.gold_ids, ids))
                else:
                    ranks.append(first_hit_rank_for(question.answers, [d.content or "" for d in found]))
            match = "gold passage" if gold else "answer"
            datasets[name] = {"n_questions": len(loaded), "match": match, "first_hit_ranks": ranks}
        return {"system": system, "store": store, "datasets": datasets}

    return evaluate


def main(argv: list[str] | None = None, evaluate: Evaluate | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", required=True, help="the adaptation's run folder (haystack run adapt --out)")
    parser.add_argument("--baseline", default="bundled:dpr-minilm-multi/question_encoder")
    parser.add_argument("--passage-model", default="bundled:all-MiniLM-L6-v2", help="the store's passage encoder")
    parser.add_argument(
        "--questions",
        default="data/selection/nq-train-selection.jsonl,data/selection/squad-train-selection.jsonl",
        help="comma-separated selection split files (training.common.selection_splits)",
    )
    parser.add_argument(
        "--match",
        choices=("gold", "answer"),
        default="gold",
        help="a hit is the question's gold passage (the selection splits name it) or any passage holding one of "
        "its answers (the paper's top-k accuracy: nq/dev.jsonl, squad/dev.jsonl)",
    )
    parser.add_argument("--eval-dir", required=True, help="folder of each encoder's evaluation (kept)")
    parser.add_argument(
        "--out", required=True, help="report path without its suffix (docs/training/adaptation_*: one a run)"
    )
    parser.add_argument(
        "--store",
        help="search this store as it is (its index and vectors) instead of encoding the pool again "
        "(training.retriever.evaluate)",
    )
    args = parser.parse_args(argv)
    run = Path(args.run)
    if not (run / "adaptation.json").is_file():
        print(f"error: {run} holds no adaptation.json: run haystack run adapt --out {run} first", file=sys.stderr)
        return 2
    if evaluate is None and args.store:
        evaluate = store_evaluation(args.store)
    if evaluate is None:
        from training.retriever.evaluate import evaluate as evaluate_encoder

        evaluate = evaluate_encoder
    questions = args.questions.split(",")
    systems = {"baseline": args.baseline, "adapted": str(run / "question_encoder")}
    gold = args.match == "gold"
    evaluations = {
        name: scored(name, system, questions, args.passage_model, Path(args.eval_dir), evaluate, gold)
        for name, system in systems.items()
    }
    command = "python -m training.retriever.adapt_report " + shlex.join(sys.argv[1:] if argv is None else argv)
    data, text = report(run, evaluations, command, gold)
    atomic_write_text(f"{args.out}.json", json.dumps(data, indent=1) + "\n")
    atomic_write_text(f"{args.out}.md", text + "\n")
    print(f"{args.out}.md, {args.out}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
