"""Teacher scores for distillation: the hybrid's top K for training questions, each scored by the re-ranker.

Questions: NQ train and a seeded sample of SQuAD train of about the same size, both without their
selection split's questions (the rule of ``dpr_components/dpr_data/selection_split.py``, as
every recipe excludes them), shuffled together (seed 0) so that any prefix of the run is a mix. The
first stage is ``pipelines/qa_rerank.yml``'s hybrid over ``--store``, the teacher its re-ranker's model
with weight 0 (the selection logit alone)::

    python -m training.retriever.teacher_scores --store indexes/pool --squad 6200 --limit 10000 \\
        --out runs/teacher/qa-rerank-k20.jsonl

The file is appended to as it goes; run the same command again to resume (questions already written
are skipped). ``<out>.settings.json`` records the settings, and a run with other settings is refused."""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

from dpr_components.dpr_data.examples import TrainingExample
from dpr_components.dpr_data.gold_documents import POOL, gold_ids, pool_ids
from dpr_components.dpr_data.loading import load_training_examples
from dpr_components.dpr_data.selection_split import NQ_SELECTION, SQUAD_SELECTION, SelectionSplit, partition
from dpr_components.dpr_data.teacher_file import TeacherRecord, read_teacher_file
from dpr_components.encoder_training.teacher_scoring import TeacherQuestion, score_to_file
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.settings import data_dir
from haystack_integrations.components.rankers.dpr.passage_ranker import PassageRanker

QA_RERANK = Path(__file__).resolve().parents[1] / "pipelines" / "qa_rerank.yml"
TEACHER_SETTINGS = ("model", "max_length", "stride", "max_question_tokens", "max_title_tokens", "precision")


def training_part(split: SelectionSplit, folder: Path) -> list[TrainingExample]:
    """The questions of ``split.source`` outside its selection split that have an answer."""
    examples = load_training_examples(folder / split.source).examples
    _, kept = partition(examples, split.fraction, lambda e: e.question)
    return [e for e in kept if e.answers]


def teacher_questions(folder: Path, squad: int, seed: int = 0) -> list[TeacherQuestion]:
    """NQ train and ``squad`` sampled SQuAD train questions (selection left out), shuffled together."""
    pool = pool_ids(folder / POOL)
    chosen = [("nq", e) for e in training_part(NQ_SELECTION, folder)]
    squad_part = training_part(SQUAD_SELECTION, folder)
    chosen += [("squad", e) for e in random.Random(seed).sample(squad_part, min(squad, len(squad_part)))]
    random.Random(seed).shuffle(chosen)
    return [
        TeacherQuestion(
            id=f"{source}:{e.id}",
            question=e.question,
            answers=list(e.answers),
            source=source,
            gold_ids=gold_ids([ctx.text for ctx in e.positives], pool),
        )
        for source, e in chosen
    ]


def describe(records: list[TeacherRecord]) -> str:
    """Questions per source, and how often the gold passage is the first stage's and the teacher's top 1."""
    lines = []
    for source in sorted({r.source for r in records}):
        chosen = [r for r in records if r.source == source]
        with_gold = [r for r in chosen if any(r.gold)]
        first = sum(r.gold[0] for r in with_gold)
        teacher = sum(r.gold[max(range(len(r.teacher)), key=r.teacher.__getitem__)] for r in with_gold)
        lines.append(
            f"{source}: {len(chosen)} questions, {len(with_gold)} with a gold passage among the candidates; "
            f"gold first: first stage {first}, teacher {teacher}"
        )
    return "\n".join(lines)


def check_settings(out: Path, settings: dict[str, Any]) -> None:
    """Write ``<out>.settings.json``, or refuse when an earlier run of ``out`` had other settings."""
    path = out.with_name(out.name + ".settings.json")
    if path.exists():
        previous = json.loads(path.read_text(encoding="utf-8"))
        if previous != settings:
            raise ValueError(f"{out} was started with other settings ({previous}); delete it and {path} to restart")
        return
    atomic_write_text(path, json.dumps(settings, indent=1) + "\n")


def first_stage_and_teacher(
    store: str, top_k: int, batch_size: int | None
) -> tuple[Any, PassageRanker, dict[str, Any]]:
    """``qa_rerank.yml``'s hybrid (returning ``top_k``) and a ranker with its re-ranker's settings, weight 0."""
    pipeline = load_pipeline(QA_RERANK, store, [])
    hybrid = pipeline.get_component("hybrid")
    hybrid.warm_up()
    init = pipeline.get_component("reranker").to_dict()["init_parameters"]
    settings = {name: init[name] for name in TEACHER_SETTINGS}
    ranker = PassageRanker(**settings, top_k=top_k, batch_size=batch_size, retrieval_weight=0.0)
    ranker.warm_up()
    first = {
        "model": hybrid.to_dict()["init_parameters"]["model"],
        "weight": hybrid.to_dict()["init_parameters"]["weight"],
    }
    return hybrid, ranker, {"first_stage": first, "teacher": settings}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default="indexes/pool")
    parser.add_argument("--out", required=True, help="teacher file (JSON lines), appended to")
    parser.add_argument("--squad", type=int, default=6200, help="SQuAD train questions sampled (seed 0)")
    parser.add_argument("--limit", type=int, default=None, help="score the first N questions of the shuffled list")
    parser.add_argument("--top-k", type=int, default=20, help="candidates per question (qa_rerank.yml reads 20)")
    parser.add_argument("--batch-size", type=int, default=8, help="questions per append to the file")
    parser.add_argument("--ranker-batch-size", type=int, default=None, help="passages per forward pass")
    args = parser.parse_args(argv)
    out = Path(args.out)
    questions = teacher_questions(data_dir(), args.squad)[: args.limit]
    hybrid, ranker, models = first_stage_and_teacher(args.store, args.top_k, args.ranker_batch_size)
    settings = {**models, "store": args.store, "squad": args.squad, "top_k": args.top_k, "seed": 0}
    check_settings(out, settings)
    resumed, written = score_to_file(questions, hybrid, ranker, out, args.top_k, args.batch_size)
    print(f"{out}: {resumed} questions resumed, {written} scored, {resumed + written} of {len(questions)} done")
    print(describe(read_teacher_file(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
