"""Average the weights of encoders fine-tuned from the same starting point (a uniform "model
soup", Wortsman et al. 2022): training outputs (question_encoder/ + passage_encoder/) are averaged
encoder by encoder, single encoder folders as they are.

    python -m training.retriever.average runs/dpr-nq/<run-a>/final runs/dpr-nq/<run-b>/final --out runs/dpr-nq/soup/final
    python -m training.retriever.average A B --weights 2,1 --out C       # weighted: 2/3 A + 1/3 B

The result loads like any training output (DenseRetriever, the passage encoder, training.retriever.evaluate);
averaging.json in it records the ingredients and their weights."""

from __future__ import annotations

import argparse
import sys

from dpr_components.encoder_training.averaging import AveragingError, average_models
from dpr_components.utils.output_folders import OutputFolderError
from training.common.command import print_outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sources", nargs="+", help="two or more training outputs or encoder folders")
    parser.add_argument(
        "--out", required=True, help="folder to write: new, empty or an earlier average (replaced atomically)"
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace --out whatever it holds (never a source, a file or .)"
    )
    parser.add_argument("--weights", help="comma-separated relative weights (default: equal)")
    args = parser.parse_args(argv)
    try:
        weights = [float(w) for w in args.weights.split(",")] if args.weights else None
    except ValueError:
        parser.error(f"--weights must be comma-separated numbers, got {args.weights!r}")
    return print_outcome(
        lambda: average_models(args.sources, args.out, weights, overwrite=args.overwrite),
        (AveragingError, OutputFolderError),
    )


if __name__ == "__main__":
    sys.exit(main())
