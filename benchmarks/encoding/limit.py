"""How close passage encoding comes to what this CPU can do: the encoder's achieved matrix rate
against the machine's attainable one.

1. Attainable rate: ``torch.matmul`` in fp32 and bf16, and ``torch._int_mm`` in int8 (int32 out;
   reported as not available when this build or CPU cannot run it), on the encoder's GEMM shapes
   (``--gemm-tokens`` rows times the model's hidden and intermediate sizes) and one large square,
   on ``--threads`` threads. Each shape repeats for ``--seconds`` after a warm-up; GFLOP/s is
   2*M*N*K / seconds. A precision's attainable rate is its best over the shapes.
2. The encoder's FLOPs, counted analytically from the model's config (:func:`encoder_flops`) for
   the padded batches the encoder runs (it sorts inputs by token length and pads each batch to its
   longest) and for the real tokens alone.
3. ``TextEncoder`` with precision fp32 and auto on ``--passages`` passages drawn from the shared
   pool (or ``--corpus``): passages/s, achieved GFLOP/s and its fraction of the attainable rate of
   the precision it computes in; the same per bucket of real token length (each bucket encoded
   on its own).
4. Where the time of one precision-auto run goes: tokenisation, linear layers, attention, other
   operations (torch.profiler) and the rest (Python, batching); and the padding.
5. The default path, what ``PassageEmbedder()`` runs (``backend="auto"``: OpenVINO where it is
   installed and exact here, else torch): the rates of 3., in the precision it computes in (OpenVINO's
   inference precision), and, on OpenVINO, per length bucket where one encode's time goes:
   tokenisation (the tokenizer timed apart), the model's time split as OpenVINO's performance
   counters split its nodes' time (GEMMs, attention, other operations; the top node types are kept
   in the JSON), the rest (Python, batching, pooling); and the padding.

Run from the repository root (writes docs/benchmarks/encoding/limit.{md,json}):

    python -m benchmarks.encoding.limit
    python -m benchmarks.encoding.limit --threads 1 --passages 200 --seconds 1 --out-dir /tmp/limit
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from benchmarks.common import command_line, cpu_name, log, set_threads, timed, write_report
from dpr_components.corpus.passages import Passage, split_documents
from dpr_components.encoders.bf16_probe import bf16_supported
from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.encoders.encoder_settings import EncoderSettings, Precision
from dpr_components.encoders.model_layout import ModelLayout
from dpr_components.encoders.openvino_model import OpenVINOEncoderModel, native_precision
from dpr_components.encoders.text_encoder import BUCKET_BATCHES, TextEncoder
from dpr_components.evaluation.pool import pool_passages
from dpr_components.evaluation.tables import markdown_table, produced_by
from dpr_components.utils.padding import padded_length
from dpr_components.utils.threads import ENCODE_THREADS_ENV, QUERY_THREADS_ENV

MODULE = "benchmarks.encoding.limit"
GEMM_PRECISIONS = ("fp32", "bf16", "int8")
ENCODER_PRECISIONS: tuple[Precision, ...] = ("fp32", "auto")
BUCKET_BOUNDS = (64, 128, 256)
CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8")
GEMM_ERRORS = (RuntimeError, AttributeError, NotImplementedError, TypeError, ValueError)
LINEAR_OPS = ("aten::linear", "aten::addmm", "aten::mm", "aten::matmul")
ATTENTION_OPS = ("aten::scaled_dot_product_attention", "aten::bmm", "aten::baddbmm", "aten::softmax", "aten::_softmax")
GEMM_NODE_TYPES = ("FullyConnected",)
# OpenVINO's CPU plugin turns a MatMul by constant weights into FullyConnected: a MatMul left multiplies
# two activations, i.e. queries by keys or scores by values.
ATTENTION_NODE_TYPES = ("ScaledDotProductAttention", "MHA", "MatMul", "Softmax", "SoftMax")
NODE_CATEGORIES = ("gemm", "attention", "other")
TOP_NODE_TYPES = 10


def gemm_shapes(hidden: int, intermediate: int, tokens: int, square: int) -> list[tuple[int, int, int]]:
    """``(M, K, N)`` of the encoder's dense products for ``tokens`` rows, and one ``square`` cube."""
    return [
        (tokens, hidden, hidden),
        (tokens, hidden, intermediate),
        (tokens, intermediate, hidden),
        (square, square, square),
    ]


def gemm_call(precision: str, m: int, k: int, n: int) -> Callable[[], object]:
    """One (M, K) x (K, N) product in ``precision`` on random operands, writing into a fixed output."""
    if precision == "int8":
        a = torch.randint(-64, 64, (m, k), dtype=torch.int8)
        b = torch.randint(-64, 64, (k, n), dtype=torch.int8)
        out = torch.empty((m, n), dtype=torch.int32)
        return lambda: torch._int_mm(a, b, out=out)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[precision]
    a, b = torch.randn(m, k).to(dtype), torch.randn(k, n).to(dtype)
    result = torch.empty((m, n), dtype=dtype)
    return lambda: torch.matmul(a, b, out=result)


def repeat_for(call: Callable[[], object], seconds: float, min_repeats: int = 3, warmup: int = 1) -> list[float]:
    """Seconds of each call of ``call``, repeated for ``seconds`` (at least ``min_repeats`` times)
    after ``warmup`` untimed calls."""
    for _ in range(warmup):
        call()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < min_repeats or time.perf_counter() - start < seconds:
        times.append(timed(call)[0])
    return times


def gemm_rate(precision: str, m: int, k: int, n: int, seconds: float) -> dict[str, Any]:
    """Best and median GFLOP/s of one shape, or ``available: False`` with the error when it cannot run."""
    shape = {"m": m, "k": k, "n": n}
    try:
        with torch.inference_mode():
            times = repeat_for(gemm_call(precision, m, k, n), seconds)
    except GEMM_ERRORS as error:
        return {**shape, "available": False, "error": f"{type(error).__name__}: {str(error).splitlines()[0]}"}
    flops = 2 * m * n * k
    return {
        **shape,
        "available": True,
        "repeats": len(times),
        "best_gflops": flops / min(times) / 1e9,
        "median_gflops": flops / statistics.median(times) / 1e9,
    }


def measure_gemms(
    shapes: Sequence[tuple[int, int, int]], seconds: float, precisions: Sequence[str] = GEMM_PRECISIONS
) -> dict[str, dict[str, Any]]:
    """Per precision: every shape's rates and the attainable rate (best over shapes, None when none ran)."""
    results: dict[str, dict[str, Any]] = {}
    for precision in precisions:
        rows = []
        for m, k, n in shapes:
            rows.append(gemm_rate(precision, m, k, n, seconds))
            shown = f"{rows[-1]['best_gflops']:.1f} GFLOP/s" if rows[-1]["available"] else rows[-1]["error"]
            log(f"{precision} {m}x{k}x{n}: {shown}")
        rates = [row["best_gflops"] for row in rows if row["available"]]
        results[precision] = {"shapes": rows, "attainable_gflops": max(rates) if rates else None}
    return results


def encoder_flops(
    hidden: int, intermediate: int, layers: int, heads: int, sequence_lengths: Sequence[int]
) -> dict[str, int]:
    """FLOPs of a BERT-style encoder over sequences of the given (padded) lengths.

    ``dense``: per token and layer the Q, K, V and output projections (4 * 2*H*H) and the
    feed-forward pair (2 * 2*H*I). ``attention``: per sequence of length L and layer the scores
    QK^T (2*L*L*H) and their product with V (2*L*L*H); the split into ``heads`` does not change
    the count. Embeddings, layer norms, activations, softmax and pooling are left out: next to
    these products their arithmetic is negligible.
    """
    if heads < 1 or hidden % heads:
        raise ValueError(f"hidden size {hidden} does not split into {heads} heads")
    tokens = sum(sequence_lengths)
    dense = layers * tokens * (4 * 2 * hidden * hidden + 2 * 2 * hidden * intermediate)
    attention = layers * sum(2 * 2 * length * length * hidden for length in sequence_lengths)
    return {"dense": dense, "attention": attention, "total": dense + attention}


def model_sizes(folder: Path) -> dict[str, int]:
    """Hidden and intermediate sizes, layers and heads from the config of the transformer in ``folder``."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(str(folder))
    return {
        "hidden": int(config.hidden_size),
        "intermediate": int(config.intermediate_size),
        "layers": int(config.num_hidden_layers),
        "heads": int(config.num_attention_heads),
    }


def padded_lengths(lengths: Sequence[int], batch_size: int, window: int, max_length: int | None = None) -> list[int]:
    """The length each input runs at: as the encoder batches them, per window of ``window`` inputs
    sorted longest first (stable) and cut into batches of ``batch_size``, each padded to its longest,
    rounded up within ``max_length`` as the encoder rounds it (:func:`padded_length`; None: not rounded)."""
    padded: list[int] = []
    for offset in range(0, len(lengths), window):
        part = lengths[offset : offset + window]
        ordered = sorted(part, key=lambda n: -n)
        for start in range(0, len(ordered), batch_size):
            batch = ordered[start : start + batch_size]
            padded += [padded_length(max(batch), max_length)] * len(batch)
    return padded


def length_bucket(length: int) -> str:
    """The bucket of a real token length: ``<=64``, ``65-128``, ``129-256`` (or ``>256``)."""
    low = 1
    for high in BUCKET_BOUNDS:
        if length <= high:
            return f"<={high}" if low == 1 else f"{low}-{high}"
        low = high + 1
    return f">{BUCKET_BOUNDS[-1]}"


def bucket_labels() -> list[str]:
    """Every bucket label, shortest lengths first."""
    return [length_bucket(1), *(length_bucket(high + 1) for high in BUCKET_BOUNDS)]


def fraction_of_attainable(achieved_gflops: float, attainable_gflops: float | None) -> float | None:
    """``achieved`` / ``attainable``; None when there is no attainable rate to compare with."""
    return achieved_gflops / attainable_gflops if attainable_gflops else None


def compute_precision(uses_bf16: bool) -> str:
    """The GEMM precision an encoder computes in: bf16 with bf16 weights, else fp32."""
    return "bf16" if uses_bf16 else "fp32"


def computes_in(encoder: TextEncoder) -> str:
    """The precision ``encoder`` computes its products in: OpenVINO's inference precision on OpenVINO
    (bf16 where asked and the CPU has it), on torch bf16 with bf16 weights, else fp32."""
    if encoder.backend == "openvino":
        return compute_precision(native_precision(encoder.uses_bf16) == "bf16")
    return compute_precision(encoder.uses_bf16)


@contextmanager
def encoding_threads_set(threads: int) -> Iterator[None]:
    """Every encode inside runs on ``threads`` torch threads, however few texts it is given."""
    before = {name: os.environ.get(name) for name in (ENCODE_THREADS_ENV, QUERY_THREADS_ENV)}
    os.environ.update(dict.fromkeys(before, str(threads)))
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def read_corpus(path: Path) -> list[Passage]:
    """A JSONL file of ``{"id", "title", "text"}`` documents split into passages as the pool is."""
    with open(path, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    return list(split_documents((str(r["id"]), r.get("title", "") or "", r["text"]) for r in records))


def sample_passages(passages: Sequence[Passage], count: int, seed: int) -> list[Passage]:
    """``count`` passages drawn at random (``seed``), in their original order; all of them when fewer."""
    chosen = sorted(random.Random(seed).sample(range(len(passages)), min(count, len(passages))))
    return [passages[i] for i in chosen]


def token_lengths(encoder: TextEncoder, texts: list[str], titles: list[str | None]) -> list[int]:
    """Each input's real token length as the encoder tokenises it."""
    return encoder.token_lengths(texts, titles)


def encode_seconds(encoder: TextEncoder, texts: list[str], titles: list[str | None], repeats: int) -> float:
    """Median seconds of ``repeats`` encodes of the passages, after one warm-up batch."""
    encoder.encode_passages(texts[: encoder.batch_size], titles[: encoder.batch_size])
    return statistics.median(timed(lambda: encoder.encode_passages(texts, titles))[0] for _ in range(repeats))


def group_rates(
    encoder: TextEncoder,
    passages: tuple[list[str], list[str | None]],
    lengths: list[int],
    sizes: dict[str, int],
    attainable: float | None,
    repeats: int,
) -> dict[str, Any]:
    """Passages/s, GFLOP/s (padded batches and real tokens) and fraction of ``attainable`` of one encode."""
    texts, titles = passages
    padded = padded_lengths(lengths, encoder.rows_per_batch, encoder.batch_size * BUCKET_BATCHES, encoder.max_length)
    flops_padded = encoder_flops(**sizes, sequence_lengths=padded)["total"]
    flops_real = encoder_flops(**sizes, sequence_lengths=lengths)["total"]
    seconds = encode_seconds(encoder, texts, titles, repeats)
    gflops_padded, gflops_real = flops_padded / seconds / 1e9, flops_real / seconds / 1e9
    return {
        "passages": len(texts),
        "seconds": seconds,
        "passages_per_s": len(texts) / seconds,
        "real_tokens": sum(lengths),
        "padded_tokens": sum(padded),
        "flops_padded": flops_padded,
        "flops_real": flops_real,
        "gflops_padded": gflops_padded,
        "gflops_real": gflops_real,
        "fraction_padded": fraction_of_attainable(gflops_padded, attainable),
        "fraction_real": fraction_of_attainable(gflops_real, attainable),
    }


def measure_encoder(
    encoder: TextEncoder,
    passages: tuple[list[str], list[str | None]],
    sizes: dict[str, int],
    attainable: dict[str, float | None],
    repeats: int,
) -> dict[str, Any]:
    """One precision: rates over all passages, then per length bucket (each bucket encoded on its own)."""
    compute = computes_in(encoder)
    lengths = token_lengths(encoder, *passages)
    overall = group_rates(encoder, passages, lengths, sizes, attainable[compute], repeats)
    log(f"{encoder.settings.precision} on {encoder.backend} ({compute}): {overall['passages_per_s']:.1f} passages/s")
    buckets = {
        label: group_rates(encoder, part, part_lengths, sizes, attainable[compute], repeats)
        for label, (part, part_lengths) in bucket_groups(passages, lengths).items()
    }
    return {
        "precision": encoder.settings.precision,
        "backend": encoder.backend,
        "compute": compute,
        **overall,
        "buckets": buckets,
    }


def bucket_groups(
    passages: tuple[list[str], list[str | None]], lengths: list[int]
) -> dict[str, tuple[tuple[list[str], list[str | None]], list[int]]]:
    """The passages (and their token lengths) of each length bucket that has any, shortest bucket first."""
    texts, titles = passages
    groups: dict[str, list[int]] = {}
    for i, length in enumerate(lengths):
        groups.setdefault(length_bucket(length), []).append(i)
    return {
        label: (
            ([texts[i] for i in groups[label]], [titles[i] for i in groups[label]]),
            [lengths[i] for i in groups[label]],
        )
        for label in bucket_labels()
        if label in groups
    }


def op_category(name: str) -> str:
    """``linear``, ``attention`` or ``other_ops``: the category of a top-level profiled operation."""
    if name in LINEAR_OPS:
        return "linear"
    if name in ATTENTION_OPS or "scaled_dot_product" in name:
        return "attention"
    return "other_ops"


def op_seconds(events: Iterable[Any]) -> dict[str, float]:
    """Seconds of the top-level profiled operations (children counted inside their parent) per category."""
    seconds = {"linear": 0.0, "attention": 0.0, "other_ops": 0.0}
    for event in events:
        if event.cpu_parent is None:
            seconds[op_category(event.name)] += event.cpu_time_total / 1e6
    return seconds


def time_breakdown(encoder: TextEncoder, passages: tuple[list[str], list[str | None]], repeats: int) -> dict[str, Any]:
    """One profiled encode's wall time split into tokenisation, operation categories and the rest; padding."""
    from torch.profiler import ProfilerActivity, profile

    texts, titles = passages
    tokenisation = statistics.median(timed(lambda: encoder.token_lengths(texts, titles))[0] for _ in range(repeats))
    encoder.encode_passages(texts[: encoder.batch_size], titles[: encoder.batch_size])
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        wall = timed(lambda: encoder.encode_passages(texts, titles))[0]
    ops = op_seconds(profiler.events())
    lengths = token_lengths(encoder, texts, titles)
    padded = padded_lengths(lengths, encoder.rows_per_batch, encoder.batch_size * BUCKET_BATCHES, encoder.max_length)
    return {
        "precision": encoder.settings.precision,
        "compute": compute_precision(encoder.uses_bf16),
        "wall_s": wall,
        "tokenisation_s": tokenisation,
        **{f"{name}_s": value for name, value in ops.items()},
        "remainder_s": wall - tokenisation - sum(ops.values()),
        "real_tokens": sum(lengths),
        "padded_tokens": sum(padded),
        "padding_ratio": sum(padded) / sum(lengths),
    }


class CountedOpenVINOEncoder(TextEncoder):
    """An OpenVINO encoder whose model is compiled with OpenVINO's performance counters (:attr:`counted`);
    otherwise the encoder the default path runs."""

    counted: OpenVINOEncoderModel

    def _openvino_model(self, model: Any, layout: ModelLayout) -> Any:  # noqa: ARG002 - TextEncoder's signature
        self.counted = OpenVINOEncoderModel.from_torch(model, bf16=self.uses_bf16, perf_count=True)
        return self.counted

    def profiled_nodes(self) -> list[Any]:
        """The profiling items of every request since the counters were last cleared."""
        return [item for request in self.counted.profiling for item in request]


def counted_encoder(settings: EncoderSettings, batch_size: int) -> CountedOpenVINOEncoder:
    """``settings`` on OpenVINO with performance counters, loaded apart from the shared models: it gets
    a model of its own, which no later encoder of these settings picks up."""
    settings = replace(settings, backend="openvino")
    TextEncoder.forget(settings)
    encoder = CountedOpenVINOEncoder(settings, batch_size=batch_size)
    encoder.load()
    TextEncoder.forget(settings)
    return encoder


def is_executed(item: Any) -> bool:
    """Whether a profiling item's node ran (not optimised away or fused into another)."""
    return getattr(item.status, "name", str(item.status)) == "EXECUTED"


def node_category(node_type: str, node_name: str) -> str:
    """``gemm``, ``attention`` or ``other``: the category of an OpenVINO node. A fused attention is a
    ``Subgraph`` node named after the ``scaled_dot_product_attention`` it came from."""
    if node_type in ATTENTION_NODE_TYPES or "scaled_dot_product_attention" in node_name.lower():
        return "attention"
    return "gemm" if node_type in GEMM_NODE_TYPES else "other"


def node_type_seconds(items: Iterable[Any]) -> dict[tuple[str, str], float]:
    """Seconds of the executed nodes per (category, node type)."""
    seconds: dict[tuple[str, str], float] = {}
    for item in items:
        if is_executed(item):
            key = (node_category(item.node_type, item.node_name), item.node_type)
            seconds[key] = seconds.get(key, 0.0) + item.real_time.total_seconds()
    return seconds


def category_seconds(by_type: dict[tuple[str, str], float]) -> dict[str, float]:
    """Seconds per node category."""
    totals = dict.fromkeys(NODE_CATEGORIES, 0.0)
    for (category, _), seconds in by_type.items():
        totals[category] += seconds
    return totals


def top_node_types(by_type: dict[tuple[str, str], float], count: int = TOP_NODE_TYPES) -> list[dict[str, Any]]:
    """The ``count`` node types that took the most time, with their category and share of all nodes' time."""
    total = sum(by_type.values())
    ranked = sorted(by_type.items(), key=lambda entry: -entry[1])[:count]
    return [
        {"node_type": node_type, "category": category, "seconds": seconds, "share": seconds / total if total else 0.0}
        for (category, node_type), seconds in ranked
    ]


def wall_shares(wall_s: float, tokenisation_s: float, model_s: float, nodes: dict[str, float]) -> dict[str, float]:
    """Shares of an encode's wall time: tokenisation, the model's time split as its nodes' time is
    (``nodes``: seconds per category, summed over parallel requests), and the rest."""
    nodes_total = sum(nodes.values())
    shares = {"tokenisation": tokenisation_s / wall_s}
    for category, seconds in nodes.items():
        shares[category] = model_s / wall_s * (seconds / nodes_total if nodes_total else 0.0)
    shares["rest"] = (wall_s - tokenisation_s - model_s) / wall_s
    return shares


def padding_share(real_tokens: int, padded_tokens: int) -> float:
    """Of the tokens the model computes, the share that are padding."""
    return (padded_tokens - real_tokens) / padded_tokens if padded_tokens else 0.0


def counted_breakdown(
    encoder: CountedOpenVINOEncoder,
    passages: tuple[list[str], list[str | None]],
    lengths: list[int],
    repeats: int,
    sizes: dict[str, int],
    attainable: float | None,
) -> dict[str, Any]:
    """Where the time of one encode of ``passages`` on OpenVINO goes (performance counters on); the padding;
    the GEMM nodes' own rate (the dense FLOPs over their time) and its fraction of ``attainable``, a ceiling
    on the whole encoder's fraction while the GEMMs run at that rate."""
    texts, titles = passages
    tokenisation = statistics.median(timed(lambda: encoder.token_lengths(texts, titles))[0] for _ in range(repeats))
    encoder.encode_passages(texts[: encoder.batch_size], titles[: encoder.batch_size])
    encoder.counted.profiling.clear()
    wall = timed(lambda: encoder.encode_passages(texts, titles))[0]
    by_type = node_type_seconds(encoder.profiled_nodes())
    nodes = category_seconds(by_type)
    # The streams compute at once, so the nodes' summed seconds over the streams is the model's wall time.
    model_s = min(sum(nodes.values()) / encoder.counted.streams, wall - tokenisation)
    padded_each = padded_lengths(
        lengths, encoder.rows_per_batch, encoder.batch_size * BUCKET_BATCHES, encoder.max_length
    )
    padded = sum(padded_each)
    flops = encoder_flops(**sizes, sequence_lengths=padded_each)
    gemm_s = nodes.get("gemm", 0.0) / encoder.counted.streams
    gemm_gflops = flops["dense"] / gemm_s / 1e9 if gemm_s else None
    return {
        "passages": len(texts),
        "gemm_gflops": gemm_gflops,
        "gemm_fraction": None if gemm_gflops is None else fraction_of_attainable(gemm_gflops, attainable),
        # Were the GEMMs all the model did: every FLOP (attention's too) in the GEMMs' time.
        "gemm_only_fraction": fraction_of_attainable(flops["total"] / gemm_s / 1e9, attainable) if gemm_s else None,
        "wall_s": wall,
        "tokenisation_s": tokenisation,
        "model_s": model_s,
        "node_seconds": nodes,
        "shares": wall_shares(wall, tokenisation, model_s, nodes),
        "top_node_types": top_node_types(by_type),
        "real_tokens": sum(lengths),
        "padded_tokens": padded,
        "padding_share": padding_share(sum(lengths), padded),
    }


def default_path_result(
    encoder: TextEncoder,
    rates: dict[str, Any],
    passages: tuple[list[str], list[str | None]],
    repeats: int,
    sizes: dict[str, int],
    attainable: dict[str, float | None],
) -> dict[str, Any]:
    """What ``backend="auto"`` resolved to for ``encoder``, its ``rates`` (:func:`measure_encoder`), and on
    OpenVINO the time breakdown per length bucket."""
    choice = encoder.backend_choice()
    result = {"backend": choice.backend, "reason": choice.reason, "compute": rates["compute"], "rates": rates}
    if choice.backend != "openvino":
        return {
            **result,
            "inference_precision": rates["compute"],
            "streams": None,
            "request_rows": None,
            "breakdown": None,
        }
    counted = counted_encoder(encoder.settings, encoder.batch_size)
    lengths = token_lengths(counted, *passages)
    breakdown = {
        label: counted_breakdown(counted, part, part_lengths, repeats, sizes, attainable[rates["compute"]])
        for label, (part, part_lengths) in bucket_groups(passages, lengths).items()
    }
    model = counted.counted
    return {
        **result,
        "inference_precision": model.precision,
        "streams": model.streams,
        "request_rows": counted.rows_per_batch,
        "breakdown": breakdown,
    }


def cpu_flags(cpuinfo: str | None = None) -> dict[str, bool]:
    """Which of ``CPU_FLAGS`` the CPU lists in ``/proc/cpuinfo`` (or in the text given)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    listed: set[str] = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            listed.update(line.split(":", 1)[1].split())
    return {flag: flag in listed for flag in CPU_FLAGS}


def machine(threads: int) -> dict[str, Any]:
    """CPU model, threads, native bf16 (as torch sees it), instruction-set flags, torch build, load."""
    return {
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "threads": threads,
        "native_bf16": bf16_supported(),
        "flags": cpu_flags(),
        "torch": torch.__version__,
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "load_average_start": os.getloadavg()[0],
        "date": time.strftime("%Y-%m-%d"),
    }


def yes_no(value: bool) -> str:
    return "yes" if value else "no"


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def render_intro(summary: dict[str, Any], command: str) -> list[str]:
    """Title, command, machine and configuration."""
    env, cfg = summary["machine"], summary["config"]
    flags = ", ".join(f"{flag} {yes_no(present)}" for flag, present in env["flags"].items())
    return [
        "# Passage encoding against the machine's limit",
        "",
        f"Produced by `{command}` (from the repository root) on {env['date']}.",
        "",
        f"- Machine: {env['cpu']}, {env['cores']} cores, {env['threads']} torch thread(s) for everything below; "
        f"native bf16 (torch): {yes_no(env['native_bf16'])}; CPU flags: {flags}; torch {env['torch']} "
        f"(kernels: {env['torch_cpu_capability']}). Load average (1 min): {env['load_average_start']:.2f} at the "
        f"start, {env['load_average_end']:.2f} at the end.",
        f"- Model: `{cfg['model']}` (hidden {cfg['sizes']['hidden']}, intermediate {cfg['sizes']['intermediate']}, "
        f"{cfg['sizes']['layers']} layers, {cfg['sizes']['heads']} heads), max length {cfg['max_length']}, batch "
        f"size {cfg['batch_size']}.",
        f"- Passages: {cfg['passages']} drawn at random (seed {cfg['seed']}) from {cfg['source']}; encoder times are "
        f"the median of {cfg['repeats']} encode(s) after a warm-up batch.",
        "- FLOPs are counted from the config: per token and layer 8·H² (Q, K, V, output) + 4·H·I (feed-forward), "
        "per sequence of length L and layer 4·L²·H (scores and weighted values); embeddings, layer norms, "
        "activations, softmax and pooling are left out. *Padded* counts the batches as run (each padded to its "
        "longest input), *real* the real tokens only. The fraction compares padded GFLOP/s with the attainable "
        "rate of the precision the encoder computes in.",
        "",
    ]


def render_gemms(summary: dict[str, Any]) -> list[str]:
    """The attainable-rate table."""
    rows = []
    for precision, result in summary["gemm"].items():
        best = result["attainable_gflops"]
        for shape in result["shapes"]:
            size = f"{shape['m']}×{shape['k']}×{shape['n']}"
            if shape["available"]:
                rates = [f"{shape['best_gflops']:.1f}", f"{shape['median_gflops']:.1f}", str(shape["repeats"])]
            else:
                rates = ["not available", "", ""]
            rows.append([precision, size, *rates, "" if best is None else f"{best:.1f}"])
        if best is None:
            rows.append([precision, "all", "not available", "", "", "not available"])
    cfg = summary["config"]
    return [
        "## Attainable matrix-multiply rate",
        "",
        f"`torch.matmul` (fp32, bf16) and `torch._int_mm` (int8 in, int32 out), M×K×N, each shape repeated for "
        f"{cfg['gemm_seconds']:g} s after a warm-up call. GFLOP/s = 2·M·N·K / seconds.",
        "",
        *markdown_table(
            ["precision", "M×K×N", "best GFLOP/s", "median GFLOP/s", "repeats", "attainable (best of shapes)"],
            rows,
            "llrrrr",
        ),
        "",
    ]


def rate_cells(row: dict[str, Any]) -> list[str]:
    """Passages, passages/s, GFLOP/s padded and real, fraction of attainable."""
    return [
        f"{row['passages']}",
        f"{row['passages_per_s']:.1f}",
        f"{row['gflops_padded']:.1f}",
        f"{row['gflops_real']:.1f}",
        percent(row["fraction_padded"]),
    ]


def render_encoder(summary: dict[str, Any]) -> list[str]:
    """The encoder table and the per-bucket table."""
    columns = ["passages", "passages/s", "GFLOP/s padded", "GFLOP/s real", "fraction of attainable"]
    runs = list(summary["encoder"].values())
    overall = [[r["precision"], r["compute"], *rate_cells(r)] for r in runs]
    buckets = [[r["precision"], r["compute"], label, *rate_cells(b)] for r in runs for label, b in r["buckets"].items()]
    return [
        "## Encoder",
        "",
        *markdown_table(["precision", "computes in", *columns], overall, "llrrrrr"),
        "",
        "## Per bucket of real token length",
        "",
        "Passages grouped by the token length of their `[CLS] title [SEP] text [SEP]` input, each group encoded "
        "on its own.",
        "",
        *markdown_table(["precision", "computes in", "tokens", *columns], buckets, "lllrrrrr"),
        "",
    ]


def render_breakdown(summary: dict[str, Any]) -> list[str]:
    """The time-breakdown table."""
    b = summary["breakdown"]
    unprofiled = summary["encoder"][b["precision"]]["seconds"]
    parts = {
        "tokenisation (tokenizer call alone, timed apart)": b["tokenisation_s"],
        "linear layers (aten::linear, addmm, mm, matmul)": b["linear_s"],
        "attention (scaled_dot_product_attention, bmm, softmax)": b["attention_s"],
        "other operations (layer norm, gelu, embeddings, pooling, copies)": b["other_ops_s"],
        "remainder (Python, batching, padding)": b["remainder_s"],
    }
    rows = [[name, f"{seconds:.3f}", percent(seconds / b["wall_s"])] for name, seconds in parts.items()]
    rows.append(["wall (one encode under the profiler)", f"{b['wall_s']:.3f}", "100.0%"])
    return [
        f"## Where the time goes (precision {b['precision']}, computes in {b['compute']})",
        "",
        "One encode of all passages under torch.profiler; operations are counted at the top level (an operation's "
        "children inside it). The remainder is the wall time less tokenisation and the profiled operations. "
        f"Without the profiler the same encode took {unprofiled:.3f} s (median).",
        "",
        *markdown_table(["part", "seconds", "share of wall"], rows, "lrr"),
        "",
        f"Padding: {b['padded_tokens']:,} tokens computed for {b['real_tokens']:,} real tokens "
        f"({b['padding_ratio']:.3f} per real token).",
        "",
    ]


def backend_label(backend: str) -> str:
    return "OpenVINO" if backend == "openvino" else backend


def render_default_path(summary: dict[str, Any]) -> list[str]:
    """The default path's rates and, on OpenVINO, its time breakdown per bucket."""
    path = summary["default_path"]
    rates = path["rates"]
    rows = [["all", *rate_cells(rates)], *([label, *rate_cells(b)] for label, b in rates["buckets"].items())]
    columns = ["tokens", "passages", "passages/s", "GFLOP/s padded", "GFLOP/s real", "fraction of attainable"]
    return [
        f"## The default path ({backend_label(path['backend'])})",
        "",
        f'What `PassageEmbedder()` runs: `backend="auto"`, which resolved to **{backend_label(path["backend"])}** '
        f"here ({path['reason']}); inference precision {path['inference_precision']}, so its fraction compares with "
        f"the attainable {path['compute']} rate. Overall: {rates['passages_per_s']:.1f} passages/s, "
        f"**{percent(rates['fraction_padded'])} of attainable** ({rates['gflops_padded']:.1f} GFLOP/s padded).",
        "",
        *markdown_table(columns, rows, "lrrrrr"),
        "",
        *render_default_breakdown(path),
    ]


def render_default_breakdown(path: dict[str, Any]) -> list[str]:
    """Per bucket: where one encode's time goes on OpenVINO, from its performance counters."""
    if path["breakdown"] is None:
        return ["Backend auto ran torch here: the torch breakdown above is its breakdown.", ""]
    unprofiled = path["rates"]["buckets"]
    rows = [
        [
            label, str(b["passages"]), f"{1000 * unprofiled[label]['seconds'] / b['passages']:.2f}",
            f"{1000 * b['wall_s'] / b['passages']:.2f}",
            *(percent(b["shares"][part]) for part in ("tokenisation", *NODE_CATEGORIES, "rest")),
            percent(b["padding_share"]),
        ]
        for label, b in path["breakdown"].items()
    ]  # fmt: skip
    header = ["tokens", "passages", "ms per passage", "ms, counted", "tokenisation", "GEMM", "attention", "other"]
    return [
        "Where the time goes, per bucket of real token length: one encode of the bucket's passages with OpenVINO's "
        f"performance counters on ({path['streams']} stream(s) computing at once, batches of {path['request_rows']} "
        "rows queued on them). *Tokenisation*: the tokenizer on the bucket's passages, timed apart. The model's "
        "time is the executed nodes' times summed over the requests and divided by the streams; it is split as "
        "those nodes' times split: *GEMM* the FullyConnected nodes "
        "(Q, K, V, output and feed-forward projections), *attention* the fused scaled-dot-product-attention "
        "subgraphs (or MatMul/Softmax between queries, keys and values when not fused), *other* every other node "
        "(layer norms, residual adds, reorders and precision conversions, embeddings). *Rest*: the wall time less "
        "tokenisation and the model (batching, padding, pooling, Python, and the moments a stream waits for "
        "work). *Padding*: padded tokens that are not "
        "real tokens, of all tokens the model computes. *ms per passage* is the unprofiled median of the rates "
        "above; *ms, counted* the encode under the counters, whose shares these are. The top node types are in "
        "the JSON.",
        "",
        *markdown_table([*header, "rest", "padding"], rows, "lrrrrrrrrr"),
        "",
        *render_gemm_ceiling(path),
    ]


def render_gemm_ceiling(path: dict[str, Any]) -> list[str]:
    """Per bucket: the GEMM nodes' own rate, and the encoder's fraction were the GEMMs all it did."""
    buckets = {label: b for label, b in path["breakdown"].items() if b.get("gemm_gflops") is not None}
    if not buckets:
        return []
    rows = [
        [label, f"{b['gemm_gflops']:.1f}", percent(b["gemm_fraction"]), percent(b["gemm_only_fraction"])]
        for label, b in buckets.items()
    ]
    return [
        "The GEMM nodes' own rate: the dense FLOPs (projections and feed-forward, padded) over the FullyConnected "
        "nodes' time divided by the streams. *Ceiling*: the encoder's fraction of attainable were the GEMMs all "
        "it did (every FLOP, attention's too, in the GEMMs' time): while its GEMMs run at this rate, no saving "
        "elsewhere takes the encoder past it.",
        "",
        *markdown_table(
            ["tokens", "GEMM GFLOP/s", "GEMM fraction of attainable", "ceiling for the encoder"], rows, "lrrr"
        ),
        "",
    ]


def render(summary: dict[str, Any], command: str) -> str:
    """The markdown report."""
    lines = [
        *render_intro(summary, command),
        *render_gemms(summary),
        *render_encoder(summary),
        *render_breakdown(summary),
        *render_default_path(summary),
        *produced_by(command),
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=f"python -m {MODULE}", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=BUNDLED_MINILM, help=f"encoder model (default: {BUNDLED_MINILM})")
    parser.add_argument("--passages", type=int, default=1000, help="passages to encode (default: 1000)")
    parser.add_argument("--corpus", type=Path, default=None, help='JSONL of {"id", "title", "text"} (default: pool)')
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3, help="encodes per measurement, median kept (default: 3)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's current count)")
    parser.add_argument("--seconds", type=float, default=3.0, help="time budget per GEMM shape (default: 3)")
    parser.add_argument("--gemm-tokens", type=int, default=64 * 128, help="M of the encoder-shaped GEMMs")
    parser.add_argument("--square", type=int, default=2048, help="side of the square GEMM (default: 2048)")
    parser.add_argument("--out-dir", type=Path, default=Path("docs/benchmarks/encoding"))
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    threads = args.threads or torch.get_num_threads()
    set_threads(threads)
    env = machine(threads)
    chosen = sample_passages(read_corpus(args.corpus) if args.corpus else pool_passages(), args.passages, args.seed)
    passages: tuple[list[str], list[str | None]] = ([p.text for p in chosen], [p.title for p in chosen])
    log(f"{len(chosen)} passages, {threads} thread(s)")
    encoders = {
        p: TextEncoder(EncoderSettings(model=args.model, precision=p), batch_size=args.batch_size)
        for p in ENCODER_PRECISIONS
    }
    sizes = model_sizes(encoders["fp32"].layout.transformer_path)
    with encoding_threads_set(threads):
        shapes = gemm_shapes(sizes["hidden"], sizes["intermediate"], args.gemm_tokens, args.square)
        gemm = measure_gemms(shapes, args.seconds)
        attainable = {p: r["attainable_gflops"] for p, r in gemm.items()}
        encoder = {p: measure_encoder(e, passages, sizes, attainable, args.repeats) for p, e in encoders.items()}
        breakdown = time_breakdown(encoders["auto"], passages, args.repeats)
        default = TextEncoder(EncoderSettings(model=args.model, backend="auto"), batch_size=args.batch_size)
        default_rates = measure_encoder(default, passages, sizes, attainable, args.repeats)
        default_path = default_path_result(default, default_rates, passages, args.repeats, sizes, attainable)
    env["load_average_end"] = os.getloadavg()[0]
    summary = {
        "machine": env,
        "config": {
            "model": args.model,
            "sizes": sizes,
            "max_length": encoders["fp32"].max_length,
            "batch_size": args.batch_size,
            "passages": len(chosen),
            "seed": args.seed,
            "source": str(args.corpus) if args.corpus else "the shared pool",
            "repeats": args.repeats,
            "gemm_seconds": args.seconds,
        },
        "gemm": gemm,
        "encoder": encoder,
        "breakdown": breakdown,
        "default_path": default_path,
    }
    command = command_line(MODULE, argv)
    write_report(args.out_dir / "limit", summary, render(summary, command))
    log(f"wrote {args.out_dir / 'limit.md'} and {args.out_dir / 'limit.json'}")


if __name__ == "__main__":
    main()
