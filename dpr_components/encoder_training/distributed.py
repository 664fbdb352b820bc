"""Distributed data parallel training on CPU (gloo) or GPU: all-gather of embeddings with the
local part kept in the autograd graph, and gradient summation across processes.

Every process builds the same global batch (the sampler is seeded by step), encodes only its
shard, gathers all shards' vectors and computes the loss of the *whole* batch: every question
against every candidate of every process, as in DPR's multi-GPU training. The loss is the same
in every process; each process's backward pass yields the gradient through its own vectors
only, so summing gradients across processes gives exactly the single-process gradient of the
global batch."""

from __future__ import annotations

import contextlib
import datetime
import os
import socket
from collections.abc import Iterable

import torch
import torch.distributed as dist


def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def init_process_group(rank: int, world_size: int, port: int, backend: str = "gloo", timeout_s: float = 1800) -> None:
    """Join a process group on this machine (localhost rendezvous at ``port``)."""
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group(backend, rank=rank, world_size=world_size, timeout=datetime.timedelta(seconds=timeout_s))


def destroy_process_group() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def rank_and_world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def gather_with_local_grad(local: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    """Concatenate every process's ``local`` ``[n_r, d]`` (``sizes[r]`` rows each) in rank order.

    The other processes' rows are constants; this process's rows are ``local`` itself, so the
    gradient of anything computed from the result flows back into the local encoder."""
    rank, world = rank_and_world()
    if world == 1:
        return local
    if len(sizes) != world or sizes[rank] != len(local):
        raise ValueError(f"rank {rank} has {len(local)} rows but sizes are {sizes}")
    longest = max(sizes)
    padded = local.detach()
    if len(padded) < longest:
        padding = padded.new_zeros((longest - len(padded), *padded.shape[1:]))
        padded = torch.cat([padded, padding])
    gathered = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(gathered, padded.contiguous())
    parts = [part[:size] for part, size in zip(gathered, sizes, strict=True)]
    parts[rank] = local
    return torch.cat(parts)


def sum_gradients(parameters: Iterable[torch.nn.Parameter]) -> None:
    """All-reduce (sum) the gradients of ``parameters`` in one flat buffer."""
    _, world = rank_and_world()
    if world == 1:
        return
    grads: list[torch.Tensor] = []
    for p in parameters:
        if not p.requires_grad:
            continue
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        grads.append(p.grad)
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    offset = 0
    for g in grads:
        n = g.numel()
        g.copy_(flat[offset : offset + n].view_as(g))
        offset += n


def barrier() -> None:
    if rank_and_world()[1] > 1:
        dist.barrier()


def broadcast_object(value: object) -> object:
    """``value`` from rank 0, in every process."""
    if rank_and_world()[1] == 1:
        return value
    holder = [value]
    dist.broadcast_object_list(holder, src=0)
    return holder[0]


def all_gather_objects(value: object) -> list[object]:
    """``value`` of every process, in rank order."""
    world = rank_and_world()[1]
    if world == 1:
        return [value]
    out: list[object] = [None] * world
    dist.all_gather_object(out, value)
    return out
