"""Train DPR's span reader from the bundled MiniLM on SQuAD (and optionally NQ) with mined negatives.

    python -m training.reader.train_reader --output runs/reader-minilm --sample 20000 --export-to models/reader-minilm
    python -m training.reader.train_reader --output runs/reader-smoke --limit 200 --max-steps 30 --dev-limit 50

Steps: (1) questions are mined once against the pool store (BM25 and dense top passages →
positives/negatives by answer matching) and cached under the cache folder; (2) the reader is
trained with resumable checkpoints in ``--output`` (run the same command again to resume);
(3) the best reader by dev exact match is exported in fp16 to ``--output``/export and, with
``--export-to``, copied there. See training/reader/README.md for the recipe and its costs.

Selection protocol (training/README.md): the questions of NQ's and SQuAD's selection splits are
left out of training (``--no-exclude-selection`` keeps them); choose on the selection files with
``--dev data/selection/squad-train-selection.jsonl`` and report on squad/dev once.

A step with a NaN or infinite loss or gradient norm stops the run (exit 2), keeping the last good
checkpoint; ``--skip-nonfinite-steps N`` skips up to N such steps without updating the weights.

A pure cross-encoder for re-ranking (``PassageRanker``): ``--objective selection`` trains the
passage-selection loss alone (the span head stays untrained; the export's reader_info.json says
so), and ``--positives-by gold-document`` makes the passages of a question's gold paragraph in
the pool positives, answer string or not:

    python -m training.reader.train_reader --output runs/ranker-smoke --objective selection \\
        --positives-by gold-document --train nq/train.jsonl --limit 200 --max-steps 30 --dev ''

(training/reader/README.md, "A pure cross-encoder (selection only)")."""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dpr_components.dpr_data.gold_documents import POOL, gold_ids, pool_ids
from dpr_components.dpr_data.selection_split import partition, split_for_source
from dpr_components.encoders.bf16_probe import bf16_enabled
from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.reader_training.data import (
    Kind,
    MinedQuestion,
    PassageLookup,
    ReaderMiningSettings,
    SourceQuestion,
    mine,
    read_mined,
    read_questions,
    write_mined,
)
from dpr_components.reader_training.model_record import earlier_record, record_provenance
from dpr_components.reader_training.ranking_file import (
    RANKING_PREFIX,
    ranking_retriever,
    teacher_rankings,
    with_short_answers,
)
from dpr_components.reader_training.train import ReaderTrainingResult, ReaderTrainingSettings, train
from dpr_components.utils.atomic_files import atomic_directory, atomic_write_text
from dpr_components.utils.init_parameters import init_parameters
from dpr_components.utils.output_folders import READER, READER_RUN, check_output_folder, claim_folder
from dpr_components.utils.settings import cache_dir, data_dir
from dpr_components.utils.threads import thread_count_option
from dpr_components.utils.validation import MAX_QUERY_CHARS

Retriever = Callable[[int], list[Any]]  # a question's index -> its ranked documents


def _kind(path: Path) -> Kind:
    """SQuAD questions come with their paragraph; NQ ones find positives by answer matching."""
    return "gold" if "squad" in str(path).lower() else "retrieved"


def _store(path: Path, encoder: str | None) -> Any:
    """The pool store (built on first use: with ``encoder``'s vectors, or text only for BM25)."""
    from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

    store = EmbeddedDocumentStore(path=str(path))
    if store.count_documents() == 0:
        from dpr_components.evaluation.pool import pool_store

        store = pool_store(encoder, path)
    return store


def _retrievers(store: Any, questions: list, names: list[str], depth: int, encoder: str) -> list[Retriever]:
    retrievers: list[Retriever] = []
    for name in names:
        if name == "bm25":
            retrievers.append(lambda i: store.bm25_retrieval(questions[i].question, depth))
        elif name == "dense":
            from haystack_integrations.components.embedders.dpr.question_embedder import QuestionEmbedder

            vectors = QuestionEmbedder(model=encoder).encoder.encode_questions(
                [q.question for q in questions], show_progress=True
            )

            def dense(i: int, v: np.ndarray = vectors) -> list[Any]:
                return store.embedding_retrieval(v[i], depth)

            retrievers.append(dense)
        elif name.startswith(RANKING_PREFIX):
            rankings = teacher_rankings(name.removeprefix(RANKING_PREFIX))
            retrievers.append(ranking_retriever(store, questions, rankings, depth))
        else:
            raise ValueError(f"unknown retriever {name!r} (use bm25, dense or ranking:TEACHER_FILE)")
    return retrievers


def with_gold_documents(questions: list[SourceQuestion]) -> None:
    """Give each question the pool documents holding its gold paragraph (``--positives-by gold-document``)."""
    pool = pool_ids(data_dir() / POOL)
    for q in questions:
        q.gold_ids = gold_ids([q.gold.text], pool) if q.gold is not None else []
    found = sum(1 for q in questions if q.gold_ids)
    print(f"{found} of {len(questions)} questions have their gold paragraph in the pool", flush=True)


def _key_settings(settings: ReaderMiningSettings) -> dict[str, Any]:
    """The mining settings in the cache key; answer matching (the default) keeps the key it had
    before ``positives_by`` existed, so the caches mined then are still used."""
    return {k: v for k, v in settings.__dict__.items() if (k, v) != ("positives_by", "answer")}


def mined_questions(
    path: Path,
    store: Any,
    store_path: Path,
    names: list[str],
    settings: ReaderMiningSettings,
    limit: int | None,
    encoder: str,
    keep_all: bool,
    sample: int | None = None,
    seed: int = 0,
    short_answer_words: int | None = None,
) -> list[MinedQuestion]:
    """Mined questions of one file (the first ``limit``, or ``sample`` drawn at random), from the
    cache when the same mining was done before."""
    if not path.is_file():
        raise SystemExit(f"{path} does not exist: set DPR_DATA_DIR to the shared data folder")
    key = json.dumps(
        [
            str(path.resolve()),
            path.stat().st_size,
            str(store_path.resolve()),
            names,
            _key_settings(settings),
            limit,
            encoder,
            keep_all,
            sample,
            seed,
            *([short_answer_words] if short_answer_words else []),  # older caches keep their key
        ],
        sort_keys=True,
    )
    cached = cache_dir() / "reader_data" / f"{path.stem}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.jsonl"
    if cached.is_file():
        print(f"mined questions: {cached}", flush=True)
        return read_mined(cached)
    questions = _questions_to_mine(path, limit, sample, seed, short_answer_words)
    if settings.positives_by == "gold-document":
        with_gold_documents(questions)
    mined = mine(
        questions,
        _kind(path),
        _retrievers(store, questions, names, settings.depth, encoder),
        settings,
        keep_all=keep_all,
    )
    write_mined(cached, mined)
    print(f"mined {len(mined)} of {len(questions)} questions from {path} → {cached}", flush=True)
    return mined


def _questions_to_mine(
    path: Path, limit: int | None, sample: int | None, seed: int, short_answer_words: int | None
) -> list[SourceQuestion]:
    """The file's questions to mine: the first ``limit`` or ``sample`` drawn at random, without the
    over-long ones, with their short answers only when ``short_answer_words`` is given."""
    questions = read_questions(path, limit)
    if sample is not None and sample < len(questions):
        chosen = np.random.default_rng(seed).choice(len(questions), size=sample, replace=False)
        questions = [questions[int(i)] for i in sorted(chosen)]
    usable = [q for q in questions if len(q.question) <= MAX_QUERY_CHARS]
    if len(usable) < len(questions):  # SQuAD train holds a few pasted paragraphs as "questions"
        print(
            f"{path}: {len(questions) - len(usable)} questions longer than {MAX_QUERY_CHARS:,} characters "
            "skipped (the retrievers refuse them)",
            flush=True,
        )
    return with_short_answers(usable, short_answer_words) if short_answer_words else usable


def _data_file(name: str) -> Path:
    """``name`` itself when it is a file (e.g. a selection split under data/selection), else under the data folder."""
    path = Path(name)
    return path if path.is_file() else data_dir() / name


def without_selection(name: str, mined: list[MinedQuestion]) -> list[MinedQuestion]:
    """``mined`` without the questions of the selection split that the file ``name`` belongs to."""
    split = split_for_source(name)
    if split is None:
        return mined
    chosen, kept = partition(mined, split.fraction, lambda q: q.question)
    print(f"{name}: {len(chosen)} questions of the {split.name} selection split left out of training", flush=True)
    return kept


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_folder_options(parser)
    _add_data_options(parser)
    _add_training_options(parser)
    _add_evaluation_options(parser)
    return parser


def _add_folder_options(parser: argparse.ArgumentParser) -> None:
    """The run folder and where its export is copied."""
    parser.add_argument("--output", default="runs/reader-minilm", help="run folder (checkpoints, log, best, export)")
    parser.add_argument(
        "--export-to",
        help="copy the fp16 export here at the end (e.g. models/reader-minilm): a new or empty folder or an "
        "earlier reader export, replaced once the copy is complete",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="let --export-to replace a folder whatever it holds (never a file)"
    )


def _add_data_options(parser: argparse.ArgumentParser) -> None:
    """The training and dev questions and how their passages are mined."""
    parser.add_argument(
        "--train",
        default="squad/train-v1.1.json,nq/train.jsonl",
        help="comma-separated training files under the data folder: squad/train-v1.1.json and/or nq/train.jsonl",
    )
    parser.add_argument(
        "--dev",
        default="squad/dev.jsonl",
        help="file for model selection: under the data folder or a path ('' for none); the selection "
        "protocol uses data/selection/squad-train-selection.jsonl (training/README.md)",
    )
    parser.add_argument(
        "--exclude-selection",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="leave the selection splits' questions out of training (default: on)",
    )
    parser.add_argument(
        "--store",
        help="pool store folder (default: <cache>/indexes/pool-minilm, or pool-text when "
        "mining with bm25 only; built if empty)",
    )
    parser.add_argument("--encoder", default=BUNDLED_MINILM, help="question encoder of the store, for dense mining")
    parser.add_argument(
        "--negatives-from",
        default="bm25,dense",
        help="retrievers to mine passages with: bm25, dense, and ranking:TEACHER_FILE (each question's candidates "
        "re-ranked by a teacher file's scores, as qa_rerank hands them to its reader; questions it lacks get none)",
    )
    parser.add_argument(
        "--short-answers",
        type=int,
        metavar="WORDS",
        help="train on answers of at most WORDS words only (NQ-open's style: 5); questions left without one are dropped",
    )
    parser.add_argument("--depth", type=int, default=50, help="passages retrieved per retriever when mining")
    parser.add_argument(
        "--positives-by",
        choices=["answer", "gold-document"],
        default="answer",
        help="answer: positives are mined passages containing an answer string; gold-document: for "
        "questions whose gold paragraph is in the pool, the passages of its documents come first among "
        "the positives (answer string or not) and are never negatives (mined and cached separately)",
    )
    parser.add_argument(
        "--objective",
        choices=["reader", "selection"],
        default="reader",
        help="reader: span + passage-selection loss; selection: the selection loss alone, a cross-encoder "
        "for PassageRanker whose span head stays untrained (any positive will do, answer span or not; "
        "dev EM then measures nothing: use --dev '' or --export last)",
    )
    parser.add_argument("--limit", type=int, help="first N training questions of each file (smoke runs)")
    parser.add_argument("--sample", type=int, help="N training questions of each file drawn at random (seeded)")


def _add_training_options(parser: argparse.ArgumentParser) -> None:
    """The model to start from and the optimisation settings."""
    parser.add_argument(
        "--init-model",
        default=BUNDLED_MINILM,
        help="an encoder (fresh span and selection heads) or a trained DPRReader folder to go on from",
    )
    parser.add_argument("--passages", type=int, default=4, help="m: passages per question (1 positive + m-1 negatives)")
    parser.add_argument("--batch-size", type=int, default=4, help="questions per step")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-steps", type=int)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--warmup-ratio", type=float, default=0.1)
    parser.add_argument("--max-length", type=int, default=192, help="tokens per passage input")
    parser.add_argument("--stride", type=int, default=64)
    parser.add_argument(
        "--precision",
        choices=["auto", "fp32", "bf16"],
        default="auto",
        help="bf16 autocast for training; auto: where the CPU has native bf16",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the training order, dropout and negatives")
    parser.add_argument(
        "--data-seed",
        type=int,
        help="seed of the --sample draw and the dev draw (default: --seed); keep it and change --seed "
        "to train again on the same mined questions in a new order",
    )


def _add_evaluation_options(parser: argparse.ArgumentParser) -> None:
    """Dev evaluation, checkpoints, logging, the export and the threads."""
    parser.add_argument("--eval-every", type=int, default=1000, help="steps between dev evaluations (0: at the end)")
    parser.add_argument("--checkpoint-every", type=int, default=200)
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--dev-limit", type=int, default=500, help="dev questions (drawn at random, seeded)")
    parser.add_argument("--dev-passages", type=int, default=8)
    parser.add_argument(
        "--export",
        choices=["best", "last"],
        default="best",
        help="export/ holds the reader with the best dev EM, or the last step's (e.g. when a larger "
        "evaluation than --dev-limit prefers it); a finished run re-exports on a second call",
    )
    parser.add_argument("--threads", type=thread_count_option, help="torch threads (default: torch's choice)")
    parser.add_argument(
        "--skip-nonfinite-steps",
        type=int,
        default=0,
        metavar="N",
        help="skip up to N steps whose loss or gradient norm is NaN or infinite (weights not updated) "
        "before stopping with an error (default 0)",
    )


def _interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args, argv)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _check_before_work(args: argparse.Namespace) -> None:
    """Refuse a damaged starting record or an unusable run or export folder before any work."""
    earlier_record(args.init_model)
    check_output_folder(args.output, READER_RUN, replace=False, hint="choose another folder for the run")
    if args.export_to:
        check_output_folder(args.export_to, READER, inputs=[args.output], overwrite=args.overwrite)
    if args.objective == "selection" and args.dev and args.export == "best":
        print("note: dev EM cannot choose a selection-only model (untrained span head); consider --export last")


def _run(args: argparse.Namespace, argv: list[str] | None) -> int:
    """Mine, train and export as ``args`` say; returns the exit code."""
    if args.threads:
        torch.set_num_threads(args.threads)
    _check_before_work(args)
    names = [n.strip() for n in args.negatives_from.split(",") if n.strip()]
    dense = "dense" in names
    store_path = Path(args.store) if args.store else cache_dir() / "indexes" / ("pool-minilm" if dense else "pool-text")
    store = _store(store_path, args.encoder if dense else None)
    settings = ReaderMiningSettings(depth=args.depth, positives_by=args.positives_by)
    data_seed = args.seed if args.data_seed is None else args.data_seed

    def mine(path: Path, limit: int | None, keep_all: bool, sample: int | None) -> list[MinedQuestion]:
        short = None if keep_all else args.short_answers  # dev questions keep all their answers
        return mined_questions(
            path,
            store,
            store_path,
            names,
            settings,
            limit,
            args.encoder,
            keep_all,
            sample,
            data_seed,
            short_answer_words=short,
        )

    train_questions, data_record = _training_questions(args, mine)
    dev_questions = mine(_data_file(args.dev), None, True, args.dev_limit) if args.dev else []
    config = _settings(args)
    claim_folder(args.output, READER_RUN)
    command = "python -m training.reader.train_reader " + " ".join(sys.argv[1:] if argv is None else argv)
    (Path(args.output) / "command.txt").write_text(command + "\n")
    # Training questions per file (after sampling and mining): the model card reports them.
    atomic_write_text(Path(args.output) / "data.json", json.dumps(data_record, indent=1) + "\n")
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops like Ctrl-C: a checkpoint is saved first
    try:
        result = train(config, train_questions, dev_questions, PassageLookup(store))
    except KeyboardInterrupt:
        print("interrupted; run the same command to resume", file=sys.stderr)
        return 130
    _finish(args, result, command, data_record)
    return 0


def _training_questions(
    args: argparse.Namespace, mine: Callable[..., list[MinedQuestion]]
) -> tuple[list[MinedQuestion], dict[str, int]]:
    """The mined training questions of every ``--train`` file, and how many each file gave."""
    train_questions: list[MinedQuestion] = []
    data_record: dict[str, int] = {}
    for name in [n.strip() for n in args.train.split(",") if n.strip()]:
        mined = mine(_data_file(name), args.limit, False, args.sample)
        if args.exclude_selection:
            mined = without_selection(name, mined)
        data_record[name] = len(mined)
        train_questions += mined
    return train_questions, data_record


def _settings(args: argparse.Namespace) -> ReaderTrainingSettings:
    """The training settings of ``args``."""
    same_names = "init_model batch_size epochs max_steps warmup_ratio max_length stride seed eval_every"
    same_names += " checkpoint_every log_every dev_passages dev_limit export objective"
    return ReaderTrainingSettings(
        **init_parameters(args, same_names),
        output_dir=args.output,
        passages_per_question=args.passages,
        learning_rate=args.lr,
        bf16=bf16_enabled(args.precision),
        max_nonfinite_steps=args.skip_nonfinite_steps,
    )


def _finish(args: argparse.Namespace, result: ReaderTrainingResult, command: str, data_record: dict[str, int]) -> None:
    """Say what was trained, record the export's provenance and copy it to ``--export-to``."""
    exported = "the last step's reader" if args.export == "last" else f"the best reader (step {result.state.best_step})"
    print(
        f"done: {result.state.step} steps, best dev EM {result.state.best_em:.2f} at step "
        f"{result.state.best_step}; {exported} in fp16 in {result.export_dir}"
    )
    if result.export_dir is not None:
        record_provenance(result.export_dir, Path(args.output), command, data_record, args.init_model)
    if args.export_to and result.export_dir is not None:
        with atomic_directory(args.export_to) as tmp:
            shutil.copytree(result.export_dir, tmp, dirs_exist_ok=True)
            tmp.chmod(0o755)
        print(f"copied to {args.export_to}")


if __name__ == "__main__":
    sys.exit(main())
