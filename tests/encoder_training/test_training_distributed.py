"""DDP on CPU with two gloo processes: gathered embeddings keep local gradients, summed
gradients equal the single-process gradient of the global batch, and a 2-process training run
ends with the same weights as a 1-process run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from dpr_components.dpr_data.examples import Ctx, TrainingExample
from dpr_components.encoder_training import distributed
from dpr_components.encoder_training.batching import BatchBuilder, BatchSettings
from dpr_components.encoder_training.losses import build_loss
from dpr_components.encoder_training.model import BiEncoder
from dpr_components.encoder_training.settings import EncoderTrainingSettings
from dpr_components.encoder_training.step import backward_batch
from dpr_components.encoder_training.train import train
from dpr_components.runs.run_log import read_log
from tests.helpers.encoder_training import tiny_run

EXAMPLES = [
    TrainingExample(
        question=f"question {i} about subject {i}" + " more" * (i % 3),
        answers=[f"answer{i}"],
        positives=[Ctx(f"T{i}", f"gold passage {i} with answer{i}" + " text" * i)],
        hard_negatives=[Ctx(f"H{i}", f"hard negative {i}" + " noise" * (i % 4))],
        id=str(i),
    )
    for i in range(8)
]


def _config(model: Path, **overrides: object) -> EncoderTrainingSettings:
    return tiny_run(model, **{"dropout": 0.0, "checkpoint_every": 100, "log_every": 1, **overrides})


def _gradients(model: BiEncoder, chunk: int | None) -> torch.Tensor:
    batch = BatchBuilder(EXAMPLES, BatchSettings(negatives=1)).build(
        [0, 1, 2, 3], 0, 0, shards=distributed.rank_and_world()[1]
    )
    model.zero_grad(set_to_none=True)
    backward_batch(model, build_loss("nll", "dot"), batch, grad_cache_chunk=chunk)
    distributed.sum_gradients(model.parameters())
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def _worker(rank: int, world: int, port: int, model_dir: str, out: str) -> None:
    torch.set_num_threads(1)
    distributed.init_process_group(rank, world, port)
    try:
        local = torch.full((rank + 1, 2), float(rank), requires_grad=True)
        gathered = distributed.gather_with_local_grad(local, [1, 2])
        gathered.sum().backward()
        assert gathered.tolist() == [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]
        assert local.grad is not None and local.grad.tolist() == [[1.0, 1.0]] * (rank + 1)

        model = BiEncoder.from_pretrained(model_dir, dropout=0.0, max_length=32).eval()
        plain, cached = _gradients(model, None), _gradients(model, 1)
        if rank == 0:
            torch.save({"plain": plain, "cached": cached}, Path(out) / "ddp_grads.pt")
        train(_config(Path(model_dir)), EXAMPLES, Path(out) / "ddp_run", show_progress=False)
    finally:
        distributed.destroy_process_group()


@pytest.mark.timeout(120)
@pytest.mark.integration
def test_two_gloo_processes_match_one(tiny_bert_dir: Path, tmp_path: Path) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    mp.spawn(_worker, args=(2, distributed.free_port(), str(tiny_bert_dir), str(tmp_path)), nprocs=2)

    model = BiEncoder.from_pretrained(str(tiny_bert_dir), dropout=0.0, max_length=32).eval()
    reference = _gradients(model, None)
    ddp = torch.load(tmp_path / "ddp_grads.pt")
    torch.testing.assert_close(ddp["plain"], reference, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(ddp["cached"], reference, rtol=1e-4, atol=1e-5)

    single = train(_config(tiny_bert_dir), EXAMPLES, tmp_path / "single_run", show_progress=False)
    assert single.steps == 2
    # Adam amplifies float noise in near-zero gradients, so compare the losses of both steps
    # (the second depends on the first update) rather than the weights bit for bit.
    losses = {}
    for run in ("single_run", "ddp_run"):
        log = read_log(tmp_path / run / "log.jsonl")
        losses[run] = [entry["loss"] for entry in log if "loss" in entry]
    assert len(losses["single_run"]) == 2
    assert losses["ddp_run"] == pytest.approx(losses["single_run"], rel=1e-4)
