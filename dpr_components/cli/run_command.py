"""``haystack run``: one request through a pipeline, or one per line of a ``--batch`` file."""

from __future__ import annotations

import argparse
from typing import Any

from dpr_components.cli.batch_lines import batch_queries
from dpr_components.cli.output_format import printable, report_line, result_text, to_json_line
from dpr_components.cli.run_inputs import base_inputs, merge_inputs
from dpr_components.index_runs.folder_run import folder_to_index, run_folder, summary_lines
from dpr_components.index_runs.streamed_run import run_streamed, streamable_corpus
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.pipeline_requests.errors import user_error
from dpr_components.pipeline_requests.inputs import request_inputs
from dpr_components.pipeline_requests.running import run_pipeline


def command_run(args: argparse.Namespace) -> int:
    """``haystack run``: one request, or one per line of a ``--batch`` file; each placed in the pipeline
    by :func:`request_inputs`, as the server and the LangChain retriever place theirs."""
    pipeline = load_pipeline(args.pipeline, args.store, args.overrides, args.allow_network, require_stores=True)
    base = base_inputs(args)
    if args.batch:
        if args.query:
            raise ValueError("give either --query or --batch, not both")
        for number, item in batch_queries(args.batch):
            try:
                inputs = request_inputs(pipeline, top_k=args.top_k, other=merge_inputs(base, item))
                result = run_pipeline(pipeline, inputs)
            except Exception as error:
                found = user_error(error)
                if found is None:
                    raise
                raise ValueError(f"{args.batch}:{number}: {found.line}") from None
            print(
                to_json_line({"line": number, **item, "result": result})
                if args.json
                else f"== {printable(str(item.get('query', item)))}\n{result_text(result)}",
                flush=True,
            )
        return 0
    inputs = request_inputs(pipeline, query=args.query, top_k=args.top_k, other=base)
    if not inputs:
        raise ValueError("no inputs: give --query, --input NAME=VALUE, --inputs-file or --batch")
    folder = folder_to_index(pipeline, inputs)
    if folder is not None:  # a folder of documents: its new and changed files, a few at a time, then a summary
        done = run_folder(pipeline, folder, inputs, lambda data, **o: run_pipeline(pipeline, data, **o), report_line)
        print(to_json_line(done.to_dict()) if args.json else "\n".join(summary_lines(done)), flush=True)
        if done.nothing_indexed:
            raise ValueError(f"no file of {folder} could be indexed (see the lines above)")
        return 0
    corpus = streamable_corpus(pipeline, inputs)
    if corpus is not None:  # an indexing run on a corpus file: a chunk at a time, whatever the corpus's size
        outcome: dict[str, Any] = run_streamed(
            pipeline, corpus, inputs, lambda data: run_pipeline(pipeline, data), report=report_line
        )
    else:
        outcome = run_pipeline(pipeline, inputs)
    print(to_json_line(outcome) if args.json else result_text(outcome))
    return 0
