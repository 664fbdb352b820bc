"""``haystack export-st`` and ``haystack export-qa``: write models for Haystack's own components."""

from __future__ import annotations

import argparse
from typing import Any

OUT_HELP = "folder to write: new, empty, or an earlier export of this command (replaced once the export is complete)"
OVERWRITE_HELP = "replace OUT whatever it holds (never the model itself, a file or the working folder)"


def add_export_parsers(commands: Any) -> None:
    """Add the ``export-st`` and ``export-qa`` subcommands to ``commands`` (argparse subparsers)."""
    st = commands.add_parser(
        "export-st",
        help="write a question or passage encoder as a sentence-transformers folder "
        "(SentenceTransformersTextEmbedder / SentenceTransformersDocumentEmbedder)",
    )
    st.add_argument("model", help="encoder folder, a pair's folder (question_encoder/) or bundled:all-MiniLM-L6-v2")
    st.add_argument("out", help=OUT_HELP)
    st.add_argument("--role", choices=["question", "passage"], default="question", help="which side of the pair")
    st.add_argument("--max-length", type=int, help="token limit (default: the encoder's own)")
    qa = commands.add_parser(
        "export-qa",
        help="write a reader's span head as a BertForQuestionAnswering folder (TransformersExtractiveReader)",
    )
    qa.add_argument("model", help="reader folder (DPRReader) or bundled name, e.g. bundled:reader-minilm")
    qa.add_argument("out", help=OUT_HELP)
    for parser in (st, qa):
        parser.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)


def command_export(args: argparse.Namespace) -> int:
    """Run ``export-st`` or ``export-qa``; prints the folder written."""
    if args.command == "export-st":
        from dpr_components.export.sentence_transformers import export_sentence_transformers

        out = export_sentence_transformers(
            args.model, args.out, role=args.role, max_length=args.max_length, overwrite=args.overwrite
        )
    else:
        from dpr_components.export.qa_model import export_qa_model

        out = export_qa_model(args.model, args.out, overwrite=args.overwrite)
    print(out)
    return 0
