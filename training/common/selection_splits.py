"""Carve the selection splits out of NQ train and SQuAD train (rule: dpr_components.dpr_data.selection_split).

    python -m training.common.selection_splits --out data/selection

Writes ``nq-train-selection.jsonl`` and ``squad-train-selection.jsonl`` (question files that
``haystack eval --questions`` reads: ``id``, ``question``, ``answers``, ``positive_ctxs`` with the
gold passage, and ``gold_ids``, the pool documents holding that passage's text: :mod:`dpr_components.dpr_data.gold_documents`) and
``manifest.json``, and prints each split's size and the digest of its ids: two machines carved
the same split when the digests agree. Questions without an answer string (20 in NQ train) that fall in
the split are never trained on but are left out of the question file, which needs answers (1 of the
NQ split's 998).

The training recipes leave the same questions out by the same rule (``--exclude-selection``,
on by default); :func:`write_part` gives one side of a mined DPR JSON lines file."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dpr_components.dpr_data.examples import TrainingExample
from dpr_components.dpr_data.gold_documents import POOL, gold_ids, pool_ids
from dpr_components.dpr_data.loading import load_training_examples
from dpr_components.dpr_data.records import RecordError
from dpr_components.dpr_data.selection_split import (
    SALT,
    SPLITS,
    SelectionSplit,
    check_fraction,
    ids_digest,
    in_selection,
    partition,
)
from dpr_components.utils.atomic_files import atomic_path, atomic_write_text
from dpr_components.utils.settings import data_dir

Part = Literal["selection", "training"]


@dataclass
class CarvedSplit:
    """The selection part of one training file: question records to write and what was left out."""

    split: SelectionSplit
    questions: int
    records: list[dict[str, Any]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    without_answers: int = 0

    def summary(self) -> dict[str, Any]:
        return {
            "source": self.split.source,
            "fraction": self.split.fraction,
            "metric": self.split.metric,
            "train_questions": self.questions,
            "selection_questions": len(self.ids),
            "written": len(self.records),
            "without_answers": self.without_answers,
            "with_gold_ids": sum(1 for r in self.records if r["gold_ids"]),
            "ids_digest": ids_digest(self.ids),
        }


def _record(example: TrainingExample, pool: dict[str, list[str]] | None) -> dict[str, Any]:
    return {
        "id": example.id,
        "question": example.question,
        "answers": list(example.answers),
        "positive_ctxs": [{"title": ctx.title, "text": ctx.text} for ctx in example.positives],
        "gold_ids": gold_ids([ctx.text for ctx in example.positives], pool or {}),
    }


def carve(split: SelectionSplit, folder: Path, pool: dict[str, list[str]] | None) -> CarvedSplit:
    """The selection part of ``split.source`` under ``folder``."""
    check_fraction(split.fraction)
    path = folder / split.source
    if not path.is_file():
        raise FileNotFoundError(f"{split.name}: training file {path} not found (set DPR_DATA_DIR to the data folder)")
    examples = load_training_examples(path).examples
    chosen, _ = partition(examples, split.fraction, lambda e: e.question)
    carved = CarvedSplit(split, len(examples), ids=[e.id for e in chosen])
    for example in chosen:
        if example.answers:
            carved.records.append(_record(example, pool))
        else:
            carved.without_answers += 1
    return carved


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    """JSON lines, written atomically (a temporary sibling renamed over ``path``)."""
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def carve_all(
    out: Path, folder: Path, pool: Path | None, splits: tuple[SelectionSplit, ...] = SPLITS
) -> list[CarvedSplit]:
    """Carve ``splits`` from ``folder`` into ``out`` (question files and ``manifest.json``)."""
    ids = pool_ids(pool) if pool is not None else None
    carved = [carve(split, folder, ids) for split in splits]  # every file read before anything is written
    for item in carved:
        write_jsonl(out / f"{item.split.name}-selection.jsonl", item.records)
    manifest: dict[str, Any] = {
        "rule": f"sha256('{SALT}' + newline + normalised question) < fraction",
        "splits": {item.split.name: item.summary() for item in carved},
    }
    atomic_write_text(out / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    return carved


def write_part(source: Path, out: Path, split: SelectionSplit, part: Part) -> tuple[int, int]:
    """Copy the lines of a DPR JSON lines file whose question is in ``part`` of ``split`` to ``out``
    (atomically); returns (lines kept, lines left out)."""
    check_fraction(split.fraction)
    if not source.is_file():
        raise FileNotFoundError(f"training file {source} not found")
    kept = dropped = 0
    with atomic_path(out) as tmp, source.open(encoding="utf-8") as lines, tmp.open("w", encoding="utf-8") as sink:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                question = json.loads(line)["question"]
            except (json.JSONDecodeError, KeyError, TypeError) as error:
                raise RecordError(f"{source}, line {number}: no question to split on ({error})") from error
            if not isinstance(question, str):
                raise RecordError(f"{source}, line {number}: field 'question': expected a string")
            if in_selection(question, split.fraction) == (part == "selection"):
                sink.write(line if line.endswith("\n") else line + "\n")
                kept += 1
            else:
                dropped += 1
    return kept, dropped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="data/selection", help="folder for the question files (git-ignored)")
    parser.add_argument("--data-dir", help="the shared data folder (default: $DPR_DATA_DIR or ../shared/data)")
    parser.add_argument("--no-pool", action="store_true", help="do not look up gold_ids in wiki/documents.jsonl")
    args = parser.parse_args(argv)
    folder = Path(args.data_dir) if args.data_dir else data_dir()
    try:
        carved = carve_all(Path(args.out), folder, None if args.no_pool else folder / POOL, SPLITS)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for item in carved:
        s = item.summary()
        print(
            f"{item.split.name}: {s['selection_questions']} of {s['train_questions']} questions "
            f"(fraction {s['fraction']}), {s['written']} written ({s['without_answers']} without answers), "
            f"{s['with_gold_ids']} with gold_ids, ids digest {s['ids_digest']}"
        )
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
