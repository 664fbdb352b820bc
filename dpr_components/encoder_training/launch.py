"""Start training from files, in this process or in several DDP processes on this machine
(gloo backend; each process encodes its share of every batch, see ``distributed.py``). A
``ValueError`` in a DDP process (bad data, a run that diverged) reaches the caller as the same
one-line ``ValueError``, not as the process's traceback."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from dpr_components.dpr_data.examples import Ctx, TrainingExample
from dpr_components.dpr_data.loading import load_training_examples
from dpr_components.encoder_training import distributed
from dpr_components.encoder_training.negatives import load_corpus_passages
from dpr_components.encoder_training.settings import EncoderTrainingSettings
from dpr_components.encoder_training.train import RESULT_FILE, EncoderTrainingResult, train
from dpr_components.utils.sources import resolve_data_source
from dpr_components.utils.threads import check_thread_count


@dataclass(frozen=True)
class TrainingInputs:
    """File names of a run's data; ``subset`` keeps that many training examples (seeded shuffle)."""

    data: str | list[str]
    dev: str | None = None
    corpus: str | None = None
    subset: int | None = None
    subset_seed: int = 0

    def load(self) -> tuple[list[TrainingExample], list[TrainingExample] | None, list[Ctx] | None]:
        import numpy as np

        sources = [self.data] if isinstance(self.data, str) else list(self.data)
        examples: list[TrainingExample] = []
        for source in sources:
            examples.extend(load_training_examples(resolve_data_source(source)).examples)
        if self.subset is not None:
            if self.subset > len(examples):
                raise ValueError(f"subset of {self.subset} examples requested but the data has {len(examples)}")
            order = np.random.default_rng(self.subset_seed).permutation(len(examples))[: self.subset]
            examples = [examples[int(i)] for i in sorted(order)]
        dev = load_training_examples(resolve_data_source(self.dev)).examples if self.dev else None
        corpus = None
        if self.corpus:
            corpus = [Ctx(p.title, p.text) for p in load_corpus_passages(resolve_data_source(self.corpus))]
        return examples, dev, corpus


def train_from_files(
    config: EncoderTrainingSettings,
    inputs: TrainingInputs,
    output_dir: str | Path,
    processes: int = 1,
    show_progress: bool = True,
) -> EncoderTrainingResult:
    """Train on ``inputs`` into ``output_dir``; with ``processes`` > 1 as DDP processes."""
    if processes < 1:
        raise ValueError(f"processes must be positive, got {processes}")
    if processes == 1:
        examples, dev, corpus = inputs.load()
        return train(config, examples, output_dir, dev, corpus, show_progress=show_progress)
    if config.batch_size % processes:
        raise ValueError(f"batch_size {config.batch_size} must be a multiple of processes ({processes})")
    port = distributed.free_port()
    with tempfile.TemporaryDirectory(prefix="dpr-ddp-errors-") as errors:
        try:
            torch.multiprocessing.spawn(
                _worker,
                args=(processes, port, config.to_dict(), inputs, str(output_dir), show_progress, errors),
                nprocs=processes,
            )
        except (torch.multiprocessing.ProcessExitedException, torch.multiprocessing.ProcessRaisedException):
            reported = sorted(Path(errors).glob("rank-*.txt"))
            if not reported:
                raise
            raise ValueError(reported[0].read_text(encoding="utf-8")) from None
    return EncoderTrainingResult(**json.loads((Path(output_dir) / RESULT_FILE).read_text(encoding="utf-8")))


def _worker(
    rank: int,
    world: int,
    port: int,
    config: dict,
    inputs: TrainingInputs,
    output_dir: str,
    show_progress: bool,
    errors: str,
) -> None:
    """One DDP process; a ``ValueError`` is written to ``errors/rank-<rank>.txt`` for the parent to report."""
    settings = EncoderTrainingSettings.from_dict(config)
    threads = settings.threads and check_thread_count("training setting 'threads'", settings.threads)
    torch.set_num_threads(threads or max(1, (os.cpu_count() or 1) // world))
    distributed.init_process_group(rank, world, port)
    try:
        examples, dev, corpus = inputs.load()
        train(settings, examples, output_dir, dev, corpus, show_progress=show_progress)
    except ValueError as error:
        (Path(errors) / f"rank-{rank}.txt").write_text(str(error), encoding="utf-8")
        sys.exit(2)
    finally:
        distributed.destroy_process_group()
