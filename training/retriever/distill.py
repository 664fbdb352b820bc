"""Distil the re-ranker into the question encoder: a listwise KL loss over the hybrid's candidates from
a teacher file (``training/retriever/teacher_scores.py``), the store's passage vectors kept as they are::

    python -m training.retriever.distill --teacher runs/teacher/qa-rerank-k20.jsonl --store indexes/pool \\
        --out runs/distill/kl-ts0.05 --student-temperature 0.05

The run resumes from its newest checkpoint when the same command is given again. The result,
``<out>/question_encoder``, is paired with the passage encoder that indexed the store; evaluate it on
the selection splits with ``python -m training.retriever.evaluate --system <out>/question_encoder --passage-model
bundled:all-MiniLM-L6-v2 ...`` (docs/training/distillation.md)."""

from __future__ import annotations

import argparse
import sys

from dpr_components.encoder_training.distillation import DistillationSettings, train_distillation


def main(argv: list[str] | None = None) -> int:
    defaults = DistillationSettings(teacher_file="", store="")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teacher", required=True, help="teacher file (training/retriever/teacher_scores.py)")
    parser.add_argument("--store", default="indexes/pool", help="the store the teacher file was scored on")
    parser.add_argument("--out", required=True, help="run folder")
    parser.add_argument("--model", default=defaults.model, help="question encoder to start from")
    parser.add_argument("--passage-model", default=defaults.passage_model, help="the store's passage encoder")
    parser.add_argument("--student-temperature", type=float, default=defaults.student_temperature)
    parser.add_argument("--teacher-temperature", type=float, default=defaults.teacher_temperature)
    parser.add_argument(
        "--retrieval-weight", type=float, default=defaults.retrieval_weight, help="teacher = logit + w * hybrid score"
    )
    parser.add_argument("--contrastive-weight", type=float, default=defaults.contrastive_weight)
    parser.add_argument("--positive", choices=["gold", "has_answer"], default=defaults.positive)
    parser.add_argument("--limit", type=int, default=None, help="the first N questions of the teacher file")
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size)
    parser.add_argument("--lr", type=float, default=defaults.learning_rate)
    parser.add_argument("--epochs", type=int, default=defaults.epochs)
    parser.add_argument("--warmup-ratio", type=float, default=defaults.warmup_ratio)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--checkpoint-every", type=int, default=defaults.checkpoint_every)
    args = parser.parse_args(argv)
    settings = DistillationSettings(
        teacher_file=args.teacher,
        store=args.store,
        model=args.model,
        passage_model=args.passage_model,
        student_temperature=args.student_temperature,
        teacher_temperature=args.teacher_temperature,
        retrieval_weight=args.retrieval_weight,
        contrastive_weight=args.contrastive_weight,
        positive=args.positive,
        limit=args.limit,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        epochs=args.epochs,
        warmup_ratio=args.warmup_ratio,
        seed=args.seed,
        checkpoint_every=args.checkpoint_every,
    )
    print(train_distillation(settings, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
