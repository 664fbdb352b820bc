"""A copy of a pipeline file with ``--set`` overrides written in, so that ``haystack eval`` can compare a
pipeline with a variant of itself (another question encoder, another λ) question by question::

    python -m training.common.pipeline_variant pipelines/search.yml --out runs/distill/kl/search.yml \\
        --set hybrid.model=runs/distill/kl/question_encoder --set hybrid.weight=25.1189
    haystack eval pipelines/search.yml runs/distill/kl/search.yml --questions SELECTION.jsonl \\
        --store indexes/pool --match gold --intervals --top-k 20

The copy is written atomically; the comments of the original are not kept (the header names it)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from dpr_components.pipeline_files.loading import apply_override, load_pipeline_spec
from dpr_components.utils.atomic_files import atomic_write_text


def write_variant(pipeline: str, assignments: list[str], out: Path) -> Path:
    """``pipeline`` with every ``component.parameter=value`` of ``assignments`` applied, at ``out``."""
    spec = load_pipeline_spec(pipeline)
    for assignment in assignments:
        apply_override(spec, assignment)
    header = f"# {pipeline} with " + " ".join(f"--set {a}" for a in assignments) + "\n"
    atomic_write_text(out, header + yaml.safe_dump(spec, sort_keys=False))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline", help="pipeline YAML file")
    parser.add_argument("--set", action="append", default=[], metavar="COMPONENT.PARAM=VALUE", dest="assignments")
    parser.add_argument("--out", required=True, help="the variant's YAML file")
    args = parser.parse_args(argv)
    print(write_variant(args.pipeline, args.assignments, Path(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
