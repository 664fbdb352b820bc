"""``haystack export-st``, ``export-qa`` and ``export-ranker``: write models for Haystack's own components."""

from __future__ import annotations

import argparse
from typing import Any

OUT_HELP = "folder to write: new, empty, or an earlier export of this command (replaced once the export is complete)"
OVERWRITE_HELP = "replace OUT whatever it holds (never the model itself, a file or the working folder)"


def add_export_parsers(commands: Any) -> None:
    """Add the ``export-st``, ``export-qa`` and ``export-ranker`` subcommands to ``commands`` (argparse subparsers)."""
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
    ranker = commands.add_parser(
        "export-ranker",
        help="write a passage ranker's selection head as a cross-encoder folder (SentenceTransformersSimilarityRanker)",
    )
    ranker.add_argument(
        "model", help="PassageRanker model folder (DPRReader) or bundled name, e.g. bundled:ranker-minilm"
    )
    ranker.add_argument("out", help=OUT_HELP)
    ranker.add_argument("--max-length", type=int, default=256, help="token limit of a question-passage pair")
    for parser in (st, qa, ranker):
        parser.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)


def command_export(args: argparse.Namespace) -> int:
    """Run ``export-st``, ``export-qa`` or ``export-ranker``; prints the folder written."""
    if args.command == "export-st":
        from dpr_components.export.sentence_transformers import export_sentence_transformers

        out = export_sentence_transformers(
            args.model, args.out, role=args.role, max_length=args.max_length, overwrite=args.overwrite
        )
    elif args.command == "export-ranker":
        from dpr_components.export.cross_encoder import export_cross_encoder

        out = export_cross_encoder(args.model, args.out, max_length=args.max_length, overwrite=args.overwrite)
    else:
        from dpr_components.export.qa_model import export_qa_model

        out = export_qa_model(args.model, args.out, overwrite=args.overwrite)
    print(out)
    return 0
