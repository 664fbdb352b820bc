"""``haystack eval``: run retrieval pipelines over a question set and write a comparison report."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from haystack import Document
from tqdm.auto import tqdm

from dpr_components.cli.pipeline_loading import load_pipeline
from dpr_components.cli.pipeline_runner import check_top_k_option, leaf_components, run_pipeline, top_k_inputs
from dpr_components.evaluation.questions import QAExample, load_questions
from dpr_components.evaluation.report import ReportTable, write_retrieval_report
from dpr_components.evaluation.retrieval_metrics import RetrievalResult, evaluate_retrieval
from dpr_components.output_files import prepare_output_folder


def _final_documents(pipeline: Any, result: dict[str, Any]) -> list[Document]:
    """The documents of the pipeline's last component that outputs documents."""
    for name in leaf_components(pipeline):
        documents = result.get(name, {}).get("documents")
        if isinstance(documents, list):
            return documents
    for outputs in result.values():
        if isinstance(outputs.get("documents"), list):
            return outputs["documents"]
    raise ValueError("the pipeline returned no 'documents' output to evaluate")


def evaluate_pipeline(
    pipeline: Any, questions: list[QAExample], top_k: int, match_mode: str, name: str
) -> tuple[RetrievalResult, float]:
    """Retrieval accuracy of one pipeline and its mean seconds per question."""
    top_k_of_results = top_k_inputs(pipeline, top_k)
    passages: list[list[str]] = []
    start = time.perf_counter()
    for example in tqdm(questions, desc=f"Evaluating {name}", unit="question"):
        data: dict[str, Any] = {"query": example.question, **top_k_of_results}
        try:
            result = run_pipeline(pipeline, data)
        except ValueError as error:
            raise ValueError(f"question {example.id!r} ({name}): {' '.join(str(error).split())}") from None
        documents = _final_documents(pipeline, result)
        passages.append([d.content or "" for d in documents])
    seconds = (time.perf_counter() - start) / max(len(questions), 1)
    result = evaluate_retrieval(
        [q.answers for q in questions], passages, mode=match_mode, max_k=top_k, question_ids=[q.id for q in questions]
    )
    return result, seconds


def command_eval(args: Any) -> int:
    """``haystack eval``: every pipeline on the question set, one comparison report."""
    check_top_k_option(args.top_k)
    prepare_output_folder(args.out)
    questions = load_questions(args.questions, split=args.split, limit=args.limit)
    systems: dict[str, RetrievalResult] = {}
    timing_rows = []
    for path in args.pipelines:
        name = Path(path).stem
        if name in systems:
            name = path
        pipeline = load_pipeline(path, args.store, args.overrides, args.allow_network, require_stores=True)
        result, seconds = evaluate_pipeline(pipeline, questions, args.top_k, args.match, name)
        systems[name] = result
        timing_rows.append([name, f"{seconds * 1000:.1f}"])
        print(f"{name}: " + "  ".join(f"top-{k} {result.accuracy(k):.1f}" for k in (1, 5, 20, 100) if k <= args.top_k))
    command = args.command_line
    write_retrieval_report(
        args.out, systems, title=f"Retrieval accuracy on {Path(str(args.questions)).name}", command=command,
        dataset_name=str(args.questions),
        extra_tables=[ReportTable("Time per question", ["system", "ms / question"], timing_rows, note="whole pipeline, one process")],
    )
    print(f"report written to {args.out}/report.md")
    return 0
