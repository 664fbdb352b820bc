"""Mine hard negatives (BM25, dense, or both) for training questions and write DPR-format JSON lines.

    python -m training.retriever.mine_negatives --data nq/train.jsonl --out runs/data/nq-train-bm25.jsonl
    python -m training.retriever.mine_negatives --data squad/train-v1.1.json --out runs/data/squad-train-bm25.jsonl \\
        --limit 7167 --shuffle-seed 0
    python -m training.retriever.mine_negatives --data nq/train.jsonl --out runs/data/nq-train-bm25-dense.jsonl \\
        --retrievers bm25,dense --dense-model bundled:all-MiniLM-L6-v2 --skip-dense-top 3

Dense mining encodes the corpus with the passage side of --dense-model (a trained pair's folder or
one encoder; vectors cached in .cache/embeddings) and searches it exactly; --skip-dense-top leaves
out each question's first dense hits, which are often relevant passages without the answer string.
--dense-backend openvino encodes as the index pipeline does, so the vectors it cached while indexing
the same corpus with the same encoder are reused instead of encoding the corpus again.

The command line leaves out the questions of NQ's or SQuAD's selection split (training/README.md,
"Selection protocol") when --data is NQ or SQuAD train or a file mined from them (told from its
name); --no-exclude-selection keeps them (train_dpr_nq mines every question and splits later).

Relative --data/--corpus paths that do not exist are looked up in the shared data folder
($DPR_DATA_DIR, default ../shared/data). The corpus (default: the shared pool,
wiki/documents.jsonl) is split into DPR's 100-word passages and indexed with our BM25; the
index is cached under .cache/training. Interrupted? Run the same command again: finished
questions are kept and skipped."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from dpr_components.dpr_data.examples import TrainingExample
from dpr_components.dpr_data.loading import load_training_examples
from dpr_components.dpr_data.selection_split import partition, split_for_source
from dpr_components.encoder_training.dense_mining import DenseSearchIndex
from dpr_components.encoder_training.negatives import (
    MiningReport,
    NegativeMiner,
    NegativeMiningSettings,
    SearchIndex,
    bm25_for,
    load_corpus_passages,
    mine_to_file,
)
from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.encoders.encoder_settings import Backend
from dpr_components.utils.settings import cache_dir
from dpr_components.utils.sources import resolve_data_source

DEFAULT_CORPUS = "wiki/documents.jsonl"


def select(examples: list[TrainingExample], limit: int | None, shuffle_seed: int | None) -> list[TrainingExample]:
    """The first ``limit`` examples, after a seeded shuffle when ``shuffle_seed`` is given."""
    if shuffle_seed is not None:
        order = np.random.default_rng(shuffle_seed).permutation(len(examples))
        examples = [examples[int(i)] for i in order]
    return examples[:limit] if limit else examples


def mine(
    data: str,
    out: str | Path,
    corpus: str = DEFAULT_CORPUS,
    settings: NegativeMiningSettings | None = None,
    limit: int | None = None,
    shuffle_seed: int | None = None,
    retrievers: tuple[str, ...] = ("bm25",),
    dense_model: str = BUNDLED_MINILM,
    skip_dense_top: int = 0,
    exclude_selection: bool = False,
    dense_backend: Backend = "torch",
) -> MiningReport | None:
    """Mine ``data`` into ``out`` unless ``out`` already exists; returns the report (None if skipped).
    ``exclude_selection`` leaves out the questions of the selection split ``data`` belongs to."""
    out = Path(out)
    if out.exists():
        print(f"{out} exists: already mined (delete it to mine again)", file=sys.stderr)
        return None
    settings = settings or NegativeMiningSettings()
    loaded = load_training_examples(resolve_data_source(data))
    print(loaded.summary(), file=sys.stderr)
    examples = loaded.examples
    split = split_for_source(data) if exclude_selection else None
    if split is not None:
        chosen, examples = partition(examples, split.fraction, lambda e: e.question)
        print(f"{len(chosen)} questions of the {split.name} selection split left out", file=sys.stderr)
    examples = select(examples, limit, shuffle_seed)
    passages = load_corpus_passages(resolve_data_source(corpus), settings.words_per_passage)
    print(f"corpus: {len(passages)} passages", file=sys.stderr)
    unknown = set(retrievers) - {"bm25", "dense"}
    if unknown or not retrievers:
        raise ValueError(f"retrievers must be bm25 and/or dense, got {','.join(retrievers)}")
    indexes: list[SearchIndex] = []
    for name in retrievers:
        if name == "bm25":
            indexes.append(bm25_for(passages, cache_dir() / "training"))
        else:
            indexes.append(
                DenseSearchIndex.for_passages(
                    dense_model, passages, cache_dir() / "embeddings", skip_dense_top, backend=dense_backend
                )
            )
    miner = NegativeMiner(passages, indexes, settings)
    meta = {
        "data": data,
        "corpus": corpus,
        "limit": limit,
        "shuffle_seed": shuffle_seed,
        "skipped_without_positive": loaded.skipped_without_positive,
    }
    if split is not None:  # earlier files keep their settings record
        meta["selection_left_out"] = split.name
    if retrievers != ("bm25",):  # earlier BM25-only files keep their settings record
        meta.update(retrievers=list(retrievers), dense_model=dense_model, skip_dense_top=skip_dense_top)
        if dense_backend != "torch":
            meta["dense_backend"] = dense_backend
    report = mine_to_file(examples, miner, out, total=len(examples), extra_meta=meta)
    print(json.dumps(report.to_dict()), file=sys.stderr)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="training questions with gold passages (any supported format)")
    parser.add_argument("--out", required=True, help="output DPR JSON lines file")
    parser.add_argument("--corpus", default=DEFAULT_CORPUS, help="corpus to mine from (JSONL or DPR TSV)")
    parser.add_argument("--num-negatives", type=int, default=30, help="hard negatives kept per question")
    parser.add_argument("--depth", type=int, default=100, help="results searched per question and retriever")
    parser.add_argument("--retrievers", default="bm25", help="bm25, dense, or bm25,dense (rankings interleaved)")
    parser.add_argument(
        "--dense-model", default=BUNDLED_MINILM, help="dense retriever: a trained pair's folder or one encoder"
    )
    parser.add_argument("--skip-dense-top", type=int, default=0, help="leave out each question's first N dense hits")
    parser.add_argument(
        "--dense-backend",
        choices=("torch", "openvino"),
        default="torch",
        help="what runs the dense encoder (openvino reuses the vectors an index pipeline cached)",
    )
    parser.add_argument(
        "--no-split-positives",
        action="store_true",
        help="keep long gold passages whole instead of their 100-word block with the answer",
    )
    parser.add_argument("--limit", type=int, help="mine only the first N questions (after --shuffle-seed)")
    parser.add_argument("--shuffle-seed", type=int, help="shuffle the questions with this seed before --limit")
    parser.add_argument(
        "--exclude-selection",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="leave out the selection split's questions when --data is NQ or SQuAD train (default: on)",
    )
    args = parser.parse_args(argv)
    try:
        settings = NegativeMiningSettings(
            num_negatives=args.num_negatives, depth=args.depth, split_positives=not args.no_split_positives
        )
        mine(
            args.data,
            args.out,
            args.corpus,
            settings,
            args.limit,
            args.shuffle_seed,
            tuple(args.retrievers.split(",")),
            args.dense_model,
            args.skip_dense_top,
            args.exclude_selection,
            args.dense_backend,
        )
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
