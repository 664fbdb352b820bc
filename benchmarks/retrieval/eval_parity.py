"""The evaluation pipelines against the direct metric: same numbers on nq/dev and squad/dev.

Each system of ``pipelines/eval_nq.yml`` and ``pipelines/eval_squad.yml`` answers every question
once; its documents are scored twice: by the evaluation pipeline (what ``haystack eval`` runs
now) and by ``evaluate_retrieval`` on the passage texts (what ``haystack eval`` computed before
it became a front end to evaluation pipelines). Writes ``docs/benchmarks/retrieval/eval_pipelines.md``/``.json``.

    python -m benchmarks.retrieval.eval_parity --store indexes/pool
(index the pool first: haystack run pipelines/index.yml --input path=$DPR_DATA_DIR/wiki/documents.jsonl --store indexes/pool)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.common import command_line, set_threads, write_report
from dpr_components.evaluation.eval_spec import evaluation_spec
from dpr_components.evaluation.pipeline_eval import evaluate_outputs, run_system
from dpr_components.evaluation.questions import load_questions
from dpr_components.evaluation.retrieval_metrics import evaluate_retrieval
from dpr_components.evaluation.tables import produced_by, table_header
from dpr_components.pipeline_files.loading import load_pipeline, load_pipeline_spec
from dpr_components.pipeline_requests.inputs import request_inputs
from dpr_components.pipeline_requests.running import run_pipeline

KS = (1, 5, 20, 100)
EVAL_FILES = ("pipelines/eval_nq.yml", "pipelines/eval_squad.yml")


def _compare(eval_file: str, store: str, limit: int | None) -> list[dict]:
    spec = evaluation_spec(load_pipeline_spec(eval_file), eval_file)
    eval_pipeline = load_pipeline(eval_file)
    questions = load_questions(spec.questions, limit=limit)
    top_k = spec.top_k or 100
    rows = []
    for name, path in spec.systems.items():
        pipeline = load_pipeline(path, store, require_stores=True)
        outputs = run_system(
            name,
            pipeline,
            questions,
            request_inputs(pipeline, top_k=top_k),
            lambda d, p=pipeline: run_pipeline(p, d),
            top_k,
        )
        pipeline_result = evaluate_outputs(eval_pipeline, questions, outputs, top_k).retrieval
        direct = evaluate_retrieval(
            [q.answers for q in questions],
            [[d.content or "" for d in docs] for docs in outputs.documents or []],
            max_k=top_k,
        )
        rows.append(
            {
                "questions": Path(str(spec.questions)).parent.name + "/" + Path(str(spec.questions)).name,
                "n": len(questions),
                "system": name,
                "pipeline_file": path,
                "evaluation_pipeline": {k: pipeline_result.accuracy(k) for k in KS},
                "direct_metric": {k: direct.accuracy(k) for k in KS},
                "same_ranks": pipeline_result.first_hit_ranks == direct.first_hit_ranks,
                "ms_per_question": outputs.seconds_per_question * 1000,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def _markdown(rows: list[dict], command: str) -> str:
    lines = [
        "# Evaluation pipelines: same numbers as the direct metric",
        "",
        "Each system answers every question once; its top-100 documents are scored by the evaluation pipeline "
        "(`pipelines/eval_nq.yml`, `pipelines/eval_squad.yml`: `RetrievalAccuracyEvaluator`, what `haystack eval` runs) "
        "and by `evaluate_retrieval` on the passage texts (the metric `haystack eval` computed directly before). "
        "Store: the 55,350-passage pool indexed by `pipelines/index.yml` with the default passage encoder; "
        "systems: `pipelines/bm25.yml`, `dense.yml`, `search.yml` as committed. One process, one torch thread; "
        "the machine (2 cores) is shared, so times are indicative only. The committed question encoder is a float16 "
        "copy, so its rows can differ by a tenth or two from the float32 run it came from in docs/training/dpr_nq.md "
        "(its model card lists both).",
        "",
        *table_header(
            [
                "questions",
                "system",
                "evaluation pipeline top-1 / 5 / 20 / 100",
                "direct metric top-1 / 5 / 20 / 100",
                "per-question ranks equal",
                "ms / question",
            ],
            "lllllr",
        ),
    ]
    for row in rows:
        cells = [" / ".join(f"{row[kind][k]:.1f}" for k in KS) for kind in ("evaluation_pipeline", "direct_metric")]
        lines.append(
            f"| {row['questions']} ({row['n']}) | {row['system']} | {cells[0]} | {cells[1]} | "
            f"{'yes' if row['same_ranks'] else '**no**'} | {row['ms_per_question']:.0f} |"
        )
    lines += ["", *produced_by(command)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default="indexes/pool")
    parser.add_argument("--limit", type=int, help="first N questions of each set (a quick check)")
    parser.add_argument("--eval-files", nargs="+", default=list(EVAL_FILES))
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (1: one process per core, no oversubscription)"
    )
    parser.add_argument("--out", default="docs/benchmarks/retrieval/eval_pipelines")
    args = parser.parse_args()
    set_threads(args.threads)
    rows = [row for eval_file in args.eval_files for row in _compare(eval_file, args.store, args.limit)]
    command = command_line("benchmarks.retrieval.eval_parity", sys.argv[1:])
    write_report(Path(args.out), {"command": command, "rows": rows}, _markdown(rows, command))
    if not all(row["same_ranks"] for row in rows):
        raise SystemExit("the evaluation pipeline and the direct metric disagree")


if __name__ == "__main__":
    main()
