"""Recipe: DPR (Karpukhin et al. 2020) on Natural Questions, at the scale of a 2-core CPU.

Starts from the bundled all-MiniLM-L6-v2, mines BM25 hard negatives from the shared pool for
nq/train, trains question and passage encoders with in-batch negatives plus one shared BM25
negative per question, and evaluates top-k retrieval accuracy on nq/dev (and squad/dev) over
the full 55,350-passage pool, next to BM25 and zero-shot MiniLM.

    python -m training.retriever.train_dpr_nq                       # the default run, every stage
    python -m training.retriever.train_dpr_nq --dry-run             # print the plan and the expected time
    python -m training.retriever.train_dpr_nq --with-squad 7000     # continue the NQ model on 7,000 SQuAD + 7,000 NQ
    python -m training.retriever.train_dpr_nq --stage report        # rewrite docs/training/ from finished runs
    python -m training.retriever.train_dpr_nq --soup RUN_A,RUN_B    # average finished runs' weights, evaluate the average

Ablations on a reduced budget (one epoch, no validation during training, the final model
scored against a sampled pool by training/retriever/sampled_pool_eval.py instead of the full pool):

    python -m training.retriever.train_dpr_nq --ablation --sweep negatives --subset 1000   # 0 / 1 / 2 hard negatives
    python -m training.retriever.train_dpr_nq --ablation --sweep batch --subset 1000       # batch 8 / 32 / 128 (GradCache)
    python -m training.retriever.train_dpr_nq --ablation --sweep subsets                   # 1,000 / 2,000 / 4,000 / 7,167

Selection protocol (training/README.md): new runs leave out the selection split of NQ and SQuAD
train (dpr_components.dpr_data.selection_split) and validate on NQ's; ``--no-exclude-selection``
trains on every question and validates on nq/dev as earlier runs did.

Every stage is restartable: mining appends and skips finished questions, training resumes from
its newest checkpoint, evaluation reuses cached passage vectors, finished stages are skipped.
Runs live in runs/dpr-nq/<variant>/; the report goes to docs/training/dpr_nq.md."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import random
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from dpr_components.dpr_data.selection_split import NQ_SELECTION, split_for_source
from dpr_components.encoder_training.averaging import average_models
from dpr_components.encoder_training.launch import TrainingInputs, train_from_files
from dpr_components.encoder_training.negatives import NegativeMiningSettings
from dpr_components.encoder_training.settings import EncoderTrainingSettings
from dpr_components.encoders.bf16_probe import bf16_supported
from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.init_parameters import init_parameters
from dpr_components.utils.output_folders import DPR_RUN, claim_folder
from dpr_components.utils.threads import thread_count_option
from training.common.selection_splits import Part, write_part
from training.retriever import evaluate as pool_eval
from training.retriever import report, sampled_pool_eval
from training.retriever.mine_negatives import mine

ROOT = Path("runs/dpr-nq")
DATA = ROOT / "data"
NQ_TRAIN, NQ_DEV, SQUAD_TRAIN = "nq/train.jsonl", "nq/dev.jsonl", "squad/train-v1.1.json"
EVAL_SETS = ("nq/dev.jsonl", "squad/dev.jsonl")
NQ_QUESTIONS = 7167
NQ_SELECTED = 998  # NQ train questions in the selection split (python -m training.common.selection_splits)
# For --dry-run: the NQ run (batch 32 + 1 negative, bf16, two threads) averaged 3.3 examples/s
# on this shared 2-core machine (runs/dpr-nq/<run>/result.json).
EXAMPLES_PER_SECOND = 3.3
POOL_ENCODING_MINUTES = 28
# Question-side runs averaged 50 examples/s with one thread (runs/dpr-nq/qside-*/log.jsonl), 15x the full step.
QUESTION_SIDE_COST = 1 / 15


@dataclass(frozen=True)
class Variant:
    """What changes between runs of the recipe; everything else is the EncoderTrainingSettings below."""

    subset: int | None = None
    batch_size: int = 32
    negatives: int = 1
    squad_questions: int = 0
    epochs: int = 1
    similarity: str = "cosine"
    learning_rate: float = 2e-5
    grad_cache_chunk: int | None = None
    bf16: bool = True
    threads: int = 2
    validation: bool = True
    multi: bool = False  # with squad_questions: train from MiniLM on all of nq/train plus the SQuAD ones
    question_side: bool = False  # train E_Q alone against MiniLM's fixed passage vectors
    dense_negatives: bool = False  # hard negatives from BM25 and zero-shot MiniLM, interleaved
    seed: int = 12345  # EncoderTrainingSettings's default; another seed gives another run of the same recipe
    # Leave out the selection split and validate on it (the command line's default; earlier runs: False).
    exclude_selection: bool = False

    @property
    def name(self) -> str:
        parts = [f"nq{self.subset or 'all'}"]
        if self.multi:
            parts = [f"multi-nqall-squad{self.squad_questions}"]
        elif self.squad_questions:
            parts = [f"squad{self.squad_questions}", f"nq{self.squad_questions}", "from-nqall"]
        if self.question_side:
            parts.insert(0, "qside")
        parts += [
            f"bs{self.batch_size}",
            f"hn{self.negatives}" + ("dense" if self.dense_negatives else ""),
            self.similarity,
            f"e{self.epochs}",
        ]
        parts.append(f"lr{self.learning_rate:g}")
        if self.seed != Variant.seed:
            parts.append(f"seed{self.seed}")
        if self.exclude_selection:
            parts.append("xsel")
        return "-".join(parts)

    @property
    def train_questions(self) -> int:
        nq = NQ_QUESTIONS - NQ_SELECTED if self.exclude_selection else NQ_QUESTIONS
        if self.multi:
            return nq + self.squad_questions
        return 2 * self.squad_questions if self.squad_questions else self.subset or nq

    def config(self) -> EncoderTrainingSettings:
        return EncoderTrainingSettings(
            model=BUNDLED_MINILM,
            train_passage_encoder=not self.question_side,
            **init_parameters(self, "seed similarity batch_size negatives epochs learning_rate"),
            **init_parameters(self, "grad_cache_chunk bf16 threads"),
            max_length=256,
            dropout=0.1,
            max_grad_norm=2.0,
            warmup_ratio=0.1,
            checkpoint_every=50,
            keep_checkpoints=2,
            val_questions=300,
            val_hard_negatives=5,
            val_pool_size=3000,
            selection_metric="mrr",
        )

    def expected_hours(self) -> float:
        # Cost grows with the passages per question (1 + negatives); GradCache adds a forward pass;
        # question-side steps encode no passage (QUESTION_SIDE_COST of a full step, measured).
        relative = (1 + self.negatives) / 2 * (1.3 if self.grad_cache_chunk else 1.0)
        if self.question_side:
            relative = QUESTION_SIDE_COST
        steps = self.train_questions // self.batch_size * self.epochs
        training = steps * self.batch_size / EXAMPLES_PER_SECOND * relative
        if not self.validation:  # an ablation: scored against the sampled pool (~14k passages) instead
            return (training + 7 * 60) / 3600
        if self.question_side:  # validation and evaluation reuse the cached passage vectors
            return (training + (self.epochs + 1) * 30 + 3 * 60) / 3600
        validation = (self.epochs + 1) * 5 * 60  # at the start and after each epoch
        return (training + validation) / 3600 + POOL_ENCODING_MINUTES / 60


def sweep(name: str | None, base: Variant) -> list[Variant]:
    if name is None:
        return [base]
    if name == "negatives":
        return [dataclasses.replace(base, negatives=n) for n in (0, 1, 2)]
    if name == "batch":
        # Memory grows with the batch (docs/training/speed.md, run logs); 128 questions would not
        # fit next to other jobs without GradCache, so that run uses chunks of 32 sequences.
        return [dataclasses.replace(base, batch_size=b, grad_cache_chunk=32 if b > 32 else None) for b in (8, 32, 128)]
    if name == "subsets":
        return [
            dataclasses.replace(base, subset=n if n < NQ_QUESTIONS else None) for n in (1000, 2000, 4000, NQ_QUESTIONS)
        ]
    if name == "squad":
        return [base] + [dataclasses.replace(base, squad_questions=n) for n in (2500, 5000, 7000)]
    raise ValueError(f"unknown sweep {name!r}")


# ---- stages ---------------------------------------------------------------------------------


# Dense mining: zero-shot MiniLM over the pool, each question's first DENSE_SKIP_TOP hits left out
# (often relevant passages without the annotated answer string); a fixed choice, not tuned.
DENSE_SKIP_TOP = 3


def mined_suffix(dense: bool) -> str:
    return "bm25-dense" if dense else "bm25"


def nq_train_file(dense: bool = False) -> Path:
    return DATA / f"nq-train-{mined_suffix(dense)}.jsonl"


def squad_file(questions: int, dense: bool = False) -> Path:
    return DATA / f"squad-train-{questions}-{mined_suffix(dense)}.jsonl"


def nq_replay_file(questions: int) -> Path:
    return DATA / f"nq-train-{questions}-bm25.jsonl"


def stage_mine(variants: list[Variant]) -> None:
    settings = NegativeMiningSettings(num_negatives=30, depth=100)
    mine(NQ_TRAIN, nq_train_file(), settings=settings)
    mine(NQ_DEV, DATA / "nq-dev-bm25.jsonl", settings=settings)
    for questions in sorted({v.squad_questions for v in variants if v.squad_questions}):
        mine(SQUAD_TRAIN, squad_file(questions), settings=settings, limit=questions, shuffle_seed=0)
    if any(v.dense_negatives for v in variants):
        # On OpenVINO, as the index pipeline encodes: the pool's vectors cached while indexing it are reused.
        dense = {"retrievers": ("bm25", "dense"), "dense_model": BUNDLED_MINILM, "skip_dense_top": DENSE_SKIP_TOP}
        dense["dense_backend"] = "openvino"
        mine(NQ_TRAIN, nq_train_file(dense=True), settings=settings, **dense)
        for questions in sorted({v.squad_questions for v in variants if v.squad_questions and v.dense_negatives}):
            mine(
                SQUAD_TRAIN,
                squad_file(questions, dense=True),
                settings=settings,
                limit=questions,
                shuffle_seed=0,
                **dense,
            )
    # Only the continuation replays NQ; the multi setting trains on all of nq/train.
    for questions in sorted({v.squad_questions for v in variants if v.squad_questions and not v.multi}):
        write_nq_replay(questions)


def write_nq_replay(questions: int) -> None:
    """A seeded sample of the mined NQ questions, replayed next to SQuAD so NQ is not forgotten."""
    out = nq_replay_file(questions)
    if out.exists():
        return
    lines = nq_train_file().read_text(encoding="utf-8").splitlines(keepends=True)
    if questions > len(lines):
        raise ValueError(
            f"--with-squad {questions}: the NQ replay needs as many NQ questions, "
            f"but {nq_train_file()} has {len(lines)}"
        )
    chosen = sorted(random.Random(0).sample(range(len(lines)), questions))
    atomic_write_text(out, "".join(lines[i] for i in chosen))


def selection_side(path: Path, part: Part) -> Path:
    """One side of a mined file's selection split (written once next to it): ``training`` leaves the
    split's questions out, ``selection`` keeps only them."""
    split = split_for_source(path) or NQ_SELECTION
    out = path.with_name(f"{path.stem}-{'sel' if part == 'selection' else 'nosel'}.jsonl")
    if not out.exists():
        kept, dropped = write_part(path, out, split, part)
        print(f"{out}: {kept} questions ({dropped} of {path.name} on the other side of {split.name})", file=sys.stderr)
    return out


def stage_baselines() -> None:
    for name, system in (("bm25", "bm25"), ("minilm-zero-shot", BUNDLED_MINILM)):
        out = ROOT / "baselines" / f"{name}.json"
        if out.exists():
            continue
        result = pool_eval.evaluate(system, EVAL_SETS)
        atomic_write_text(out, json.dumps({**result, "name": name}, indent=1))


def run_dir(variant: Variant) -> Path:
    return ROOT / variant.name


def stage_train(variant: Variant) -> None:
    """Train ``variant`` from MiniLM on NQ; a SQuAD variant continues from the NQ model instead
    (one pass over the 7,167 + N questions from scratch is beyond this CPU's budget)."""
    data = [str(nq_train_file(variant.dense_negatives))]
    config = variant.config()
    if variant.multi:
        if not variant.squad_questions or variant.subset:
            raise ValueError("--multi needs --with-squad N and no --subset")
        data.append(str(squad_file(variant.squad_questions, variant.dense_negatives)))
    elif variant.squad_questions:
        if variant.subset:
            raise ValueError("--subset samples NQ questions; do not combine it with --with-squad")
        nq_run = run_dir(dataclasses.replace(variant, squad_questions=0)) / "result.json"
        if not nq_run.exists():
            raise FileNotFoundError(f"{nq_run} not found: train the NQ model first (without --with-squad)")
        nq_model = Path(json.loads(nq_run.read_text(encoding="utf-8"))["model_dir"])
        config = dataclasses.replace(
            config, model=str(nq_model / "question_encoder"), passage_model=str(nq_model / "passage_encoder")
        )
        data = [str(squad_file(variant.squad_questions)), str(nq_replay_file(variant.squad_questions))]
    dev = str(DATA / "nq-dev-bm25.jsonl") if variant.validation else None
    if variant.exclude_selection:
        data = [str(selection_side(Path(path), "training")) for path in data]
        if variant.validation:
            dev = str(selection_side(nq_train_file(variant.dense_negatives), "selection"))
    inputs = TrainingInputs(data=data, dev=dev, corpus=pool_eval.POOL, subset=variant.subset)
    out = run_dir(variant)
    if (out / "result.json").exists():
        print(f"{variant.name}: already trained", file=sys.stderr)
        return
    claim_folder(out, DPR_RUN)  # marked as a run first: the trainer refuses a folder of unknown files
    atomic_write_text(out / "variant.json", json.dumps(dataclasses.asdict(variant), indent=1))
    result = train_from_files(config, inputs, out)
    print(f"trained {variant.name}: {result.steps} steps, model in {result.model_dir}", file=sys.stderr)


def evaluated_model(folder: Path, variant: Variant) -> Path:
    """The model of a finished run that the full-pool evaluation scores."""
    result_json = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    # The SQuAD continuation validates on NQ dev only, where its starting point (the NQ model)
    # already scores best, so best-checkpoint selection would hand back that starting point:
    # its final model is the one that learned from SQuAD. The same holds for the multi setting,
    # whose start is zero-shot MiniLM.
    return Path(result_json["final_dir"] if variant.squad_questions else result_json["model_dir"])


def soup_dir(runs: list[str]) -> Path:
    digest = hashlib.sha1("\n".join(sorted(runs)).encode("utf-8")).hexdigest()[:8]
    return ROOT / f"soup{len(runs)}-{digest}"


def stage_soup(runs: list[str]) -> Path:
    """Average the evaluated models of finished runs (training/retriever/average.py) and evaluate the average."""
    if len(set(runs)) < 2:
        raise ValueError(f"--soup needs two or more different runs, got {runs}")
    models, variants = [], []
    for name in runs:
        folder = ROOT / name
        if not (folder / "result.json").is_file() or not (folder / "variant.json").is_file():
            raise FileNotFoundError(f"{folder}: not a finished run of this recipe (no result.json / variant.json)")
        variant = Variant(**json.loads((folder / "variant.json").read_text(encoding="utf-8")))
        variants.append(variant)
        models.append(evaluated_model(folder, variant))
    out = soup_dir(runs)
    if not (out / "final").is_dir():
        average_models(models, out / "final")
    if not (out / "eval.json").exists():
        # Question-side runs share MiniLM's passage encoder, so their average has it too (checked).
        passage_model = BUNDLED_MINILM if all(v.question_side for v in variants) else None
        result = pool_eval.evaluate(str(out / "final"), EVAL_SETS, passage_model=passage_model)
        atomic_write_text(out / "eval.json", json.dumps({**result, "name": out.name, "soup": runs}, indent=1))
    return out


def stage_evaluate(variant: Variant) -> None:
    folder = run_dir(variant)
    out = folder / "eval.json"
    result_file = folder / "result.json"
    if out.exists() or not result_file.exists():
        return
    # Recorded relative to the repository so the report names no machine paths.
    # A question-side run kept MiniLM's passage encoder: its cached pool vectors are reused (checked equal).
    passage_model = BUNDLED_MINILM if variant.question_side else None
    result = pool_eval.evaluate(str(evaluated_model(folder, variant)), EVAL_SETS, passage_model=passage_model)
    atomic_write_text(
        out, json.dumps({**result, "name": variant.name, "variant": dataclasses.asdict(variant)}, indent=1)
    )


def stage_sampled(variants: list[Variant]) -> None:
    """Score each run's final model (and zero-shot MiniLM once) against the sampled pool."""
    jobs = [(ROOT / "baselines" / "sampled-minilm-zero-shot.json", BUNDLED_MINILM, "cosine")]
    for variant in variants:
        result_file = run_dir(variant) / "result.json"
        if result_file.exists():
            final = json.loads(result_file.read_text(encoding="utf-8"))["final_dir"]
            jobs.append((run_dir(variant) / "sampled_eval.json", final, variant.similarity))
    jobs = [job for job in jobs if not job[0].exists()]
    if not jobs:
        return
    candidates = sampled_pool_eval.candidate_set(str(DATA / "nq-dev-bm25.jsonl"))
    for out, system, similarity in jobs:
        result = sampled_pool_eval.evaluate_sampled(system, candidates, similarity)
        atomic_write_text(
            out,
            json.dumps(
                {**result, "name": out.parent.name if out.name == "sampled_eval.json" else "minilm-zero-shot"}, indent=1
            ),
        )
        print(f"{system}: {result['metrics']}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    """The command's options."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--stage", default="all", choices=["all", "mine", "baselines", "train", "evaluate", "sampled", "report"]
    )
    parser.add_argument("--sweep", choices=["negatives", "batch", "subsets", "squad"])
    _add_data_options(parser)
    _add_training_options(parser)
    _add_run_options(parser)
    return parser


def _add_data_options(parser: argparse.ArgumentParser) -> None:
    """The questions, negatives and encoders a run trains on."""
    parser.add_argument("--subset", type=int, help="train on a seeded random subset of N NQ questions")
    parser.add_argument("--batch-size", type=int, default=Variant.batch_size)
    parser.add_argument("--negatives", type=int, default=Variant.negatives, help="BM25 negatives per question")
    parser.add_argument(
        "--with-squad",
        type=int,
        nargs="?",
        const=7000,
        default=0,
        metavar="N",
        help="continue the NQ model on N SQuAD train questions plus N NQ ones (default N: 7000; without --multi at most the 7,167 NQ questions)",
    )
    parser.add_argument(
        "--multi",
        action="store_true",
        help="with --with-squad N: train from MiniLM on nq/train plus N SQuAD questions in one mix "
        "(the paper's multi setting) instead of continuing the NQ model",
    )
    parser.add_argument(
        "--question-side",
        action="store_true",
        help="train the question encoder alone against MiniLM's fixed passage vectors: "
        "an index built with MiniLM stays valid, and a step costs a fraction",
    )
    parser.add_argument(
        "--dense-negatives",
        action="store_true",
        help="hard negatives from BM25 and zero-shot MiniLM interleaved (default: BM25 only)",
    )


def _add_training_options(parser: argparse.ArgumentParser) -> None:
    """The optimisation settings of a run."""
    parser.add_argument(
        "--seed", type=int, default=Variant.seed, help="training seed (batch order, negatives, dropout)"
    )
    parser.add_argument("--epochs", type=int, default=Variant.epochs)
    parser.add_argument("--similarity", default=Variant.similarity, choices=["dot", "cosine", "l2"])
    parser.add_argument("--learning-rate", type=float, default=Variant.learning_rate)
    parser.add_argument("--grad-cache-chunk", type=int, help="GradCache chunk size (sequences)")
    parser.add_argument(
        "--fp32",
        action="store_true",
        help="train in fp32 (default: bf16 autocast where the CPU computes bf16 natively, faster there: "
        "docs/training/speed.md; fp32 elsewhere)",
    )
    parser.add_argument("--threads", type=thread_count_option, default=Variant.threads)


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """Budget, soups, the selection protocol and dry runs."""
    parser.add_argument(
        "--ablation",
        action="store_true",
        help="reduced budget: 1 epoch, no validation while training, sampled-pool evaluation",
    )
    parser.add_argument(
        "--soup",
        metavar="RUNS",
        help="comma-separated names of finished runs (folders in runs/dpr-nq): average their "
        "weights (a uniform model soup), evaluate it and rewrite the report",
    )
    parser.add_argument(
        "--exclude-selection",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="leave out the selection split of NQ and SQuAD train and validate on NQ's (default: on; "
        "--no-exclude-selection trains on every question and validates on nq/dev, as runs before the protocol)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the runs and their expected time, do nothing")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.multi and (not args.with_squad or args.subset):
        parser.error("--multi needs --with-squad N and no --subset")
    if args.question_side and args.with_squad and not args.multi:
        parser.error("--question-side starts from MiniLM: use it alone or with --with-squad N --multi")
    if args.dense_negatives and args.with_squad and not args.multi:
        parser.error("--dense-negatives: use it alone or with --with-squad N --multi")
    if args.question_side and args.grad_cache_chunk:
        parser.error("--question-side encodes only questions: --grad-cache-chunk is not needed")
    same_names = "subset batch_size negatives epochs similarity learning_rate grad_cache_chunk threads multi"
    same_names += " question_side dense_negatives seed exclude_selection"
    bf16 = not args.fp32 and bf16_supported()
    if not args.fp32 and not bf16:
        print("this CPU has no native bf16 (autocast would run far slower): training in fp32", file=sys.stderr)
    base = Variant(**init_parameters(args, same_names), squad_questions=args.with_squad, bf16=bf16)
    if args.ablation:
        base = dataclasses.replace(base, epochs=1, validation=False)
    variants = sweep(args.sweep, base)
    if args.dry_run:
        for v in variants:
            hours = v.expected_hours()
            print(f"{v.name}: {v.train_questions} questions, ~{hours:.1f} h (training, validation, pool encoding)")
        return 0
    started = time.perf_counter()
    command = "python -m training.retriever.train_dpr_nq " + shlex.join(sys.argv[1:] if argv is None else argv)
    try:
        if args.soup:
            print(f"averaged and evaluated: {stage_soup(args.soup.split(','))}", file=sys.stderr)
            report.write_report(ROOT, Path("docs/training"), command)
            return 0
        if args.stage in ("all", "mine"):
            stage_mine(variants)
        if args.stage in ("all", "baselines"):
            stage_baselines()
        for variant in variants:
            if args.stage in ("all", "train"):
                stage_train(variant)
            if args.stage in ("all", "evaluate") and not args.ablation:
                stage_evaluate(variant)
        if args.stage in ("all", "sampled") and (args.ablation or args.stage == "sampled"):
            stage_sampled(variants)
        if args.stage in ("all", "report"):
            report.write_report(ROOT, Path("docs/training"), command)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"done in {(time.perf_counter() - started) / 60:.1f} min", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
