"""Train a DPR bi-encoder from DPR-format data (any format ``load_training_examples`` reads).

    python -m training.retriever.train --data runs/data/nq-train-bm25.jsonl --out runs/dpr \\
        --dev runs/data/nq-dev-bm25.jsonl --corpus wiki/documents.jsonl \\
        --set batch_size=32 --set negatives=1 --set similarity=cosine --set grad_cache_chunk=16
    python -m training.retriever.train ... --processes 2          # DDP on this machine (gloo)

Settings: --config FILE (JSON object) and --set NAME=VALUE (VALUE parsed as JSON when it
parses, as the haystack command's --set does; NaN and Infinity are refused), any field of dpr_components.encoder_training.settings.EncoderTrainingSettings. Interrupted? Run the same
command again: it resumes from the newest checkpoint in --out. A step with a NaN or infinite loss
or gradient norm stops the run (exit 2), keeping the last good checkpoint; run the same command
with --skip-nonfinite-steps N to skip up to N such steps without updating the weights."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dpr_components.encoder_training.launch import TrainingInputs, train_from_files
from dpr_components.encoder_training.settings import EncoderTrainingSettings
from dpr_components.pipeline_files.loading import parse_value
from dpr_components.utils.output_folders import DPR_RUN, check_output_folder
from dpr_components.utils.validation import strict_json_loads


def parse_settings(config_file: str | None, assignments: list[str]) -> dict:
    settings: dict = {}
    if config_file:
        try:
            loaded = strict_json_loads(Path(config_file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as error:
            raise ValueError(f"--config {config_file}: cannot read it ({error})") from None
        except json.JSONDecodeError as error:
            raise ValueError(f"--config {config_file}: not JSON ({error.msg} at line {error.lineno})") from None
        except ValueError as error:  # NaN, Infinity or an over-long integer
            raise ValueError(f"--config {config_file}: {error}") from None
        if not isinstance(loaded, dict):
            raise ValueError(f"--config {config_file}: expected a JSON object of settings")
        settings.update(loaded)
    for item in assignments:
        if "=" not in item:
            raise ValueError(f"--set expects NAME=VALUE, got {item!r}")
        name, raw = item.split("=", 1)
        settings[name] = parse_value(raw, f"--set {name}")
    return settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, action="append", help="training data (repeat to concatenate)")
    parser.add_argument(
        "--out", required=True, help="run folder: new, empty, or a run of this command to resume (nothing else)"
    )
    parser.add_argument("--dev", help="validation examples (DPR format; hard negatives used for the average rank)")
    parser.add_argument(
        "--corpus", help="corpus for random negatives and the validation pool (e.g. wiki/documents.jsonl)"
    )
    parser.add_argument("--subset", type=int, help="train on a seeded random subset of this many examples")
    parser.add_argument("--config", help="JSON file of training settings")
    parser.add_argument("--set", dest="assignments", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--processes", type=int, default=1, help="DDP processes on this machine")
    parser.add_argument(
        "--skip-nonfinite-steps",
        type=int,
        metavar="N",
        help="skip up to N steps whose loss or gradient norm is NaN or infinite (weights not updated) "
        "before stopping; default 0 (the setting max_nonfinite_steps)",
    )
    args = parser.parse_args(argv)
    try:
        settings = parse_settings(args.config, args.assignments)
        if args.skip_nonfinite_steps is not None:
            settings["max_nonfinite_steps"] = args.skip_nonfinite_steps
        config = EncoderTrainingSettings.from_dict(settings)
        check_output_folder(args.out, DPR_RUN, replace=False, hint="choose another folder for the run")
        inputs = TrainingInputs(args.data, args.dev, args.corpus, args.subset)
        result = train_from_files(config, inputs, args.out, processes=args.processes)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result.to_dict(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
