"""Convert encoder folders between the DPR, sentence-transformers and plain BERT layouts.

    python -m training.retriever.convert to-dpr bundled:all-MiniLM-L6-v2 models/minilm-dpr
    python -m training.retriever.convert to-dpr runs/dpr/final/question_encoder models/dpr --passage runs/dpr/final/passage_encoder --fp16
    python -m training.retriever.convert to-st runs/dpr/final/question_encoder models/question-st
    python -m training.retriever.convert to-bert runs/dpr/final/passage_encoder models/passage-bert
    python -m training.retriever.convert question-only runs/dpr/final models/dpr/question_encoder \\
        --paired-with bundled:all-MiniLM-L6-v2 --fp16

Pooling and normalisation travel with the weights (sentence-transformers modules, or the
encoder_config.json sidecar). --fp16 stores float16 safetensors (half the size) that load as
float32."""

from __future__ import annotations

import argparse
import sys

from dpr_components.encoder_training.convert import (
    question_encoder_only,
    to_bert,
    to_dpr,
    to_sentence_transformers,
)
from dpr_components.encoders.model_layout import EncoderLoadError
from training.common.command import print_outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    dpr = commands.add_parser("to-dpr", help="to question_encoder/ + passage_encoder/ (Hugging Face DPR)")
    dpr.add_argument("source")
    dpr.add_argument("out")
    dpr.add_argument("--passage", help="separate source for the passage encoder (default: same weights)")
    for name, help_text in (
        ("to-st", "one encoder to a sentence-transformers folder"),
        ("to-bert", "one encoder to a plain BERT folder with sidecar"),
    ):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("source")
        sub.add_argument("out")
    question_only = commands.add_parser(
        "question-only", help="a question-side run's question encoder alone, paired with the fixed passage encoder"
    )
    question_only.add_argument("source", help="the run's pair folder (question_encoder/ + passage_encoder/)")
    question_only.add_argument("out")
    question_only.add_argument(
        "--paired-with", required=True, help="the passage encoder the run kept fixed (checked to make the same vectors)"
    )
    for sub in commands.choices.values():
        sub.add_argument("--fp16", action="store_true", help="store float16 weights")
        sub.add_argument(
            "--overwrite", action="store_true", help="replace OUT whatever it holds (never a source, a file or .)"
        )
    args = parser.parse_args(argv)

    def convert() -> object:
        if args.command == "to-dpr":
            return to_dpr(args.source, args.out, passage_source=args.passage, fp16=args.fp16, overwrite=args.overwrite)
        if args.command == "question-only":
            return question_encoder_only(
                args.source, args.out, args.paired_with, fp16=args.fp16, overwrite=args.overwrite
            )
        if args.command == "to-st":
            return to_sentence_transformers(args.source, args.out, fp16=args.fp16, overwrite=args.overwrite)
        return to_bert(args.source, args.out, fp16=args.fp16, overwrite=args.overwrite)

    return print_outcome(convert, (ValueError, EncoderLoadError, FileNotFoundError))


if __name__ == "__main__":
    sys.exit(main())
