"""A transformers encoder compiled by OpenVINO: the ``openvino`` back end of passage encoding.

OpenVINO converts the loaded torch model once (a few seconds) and runs it with its own CPU
kernels: on CPUs with native bf16 it computes in bf16 (its vectors are closer to fp32's than
torch's bf16 weights), elsewhere in fp32, which it computes faster than torch here
(docs/benchmarks/encoding/backends.md). The model takes any batch size and sequence length. Passages go
through :meth:`OpenVINOEncoderModel.run_queued`: small batches on a ring of infer requests, one
stream per thread, none waiting for another. Only the pooled vectors leave it: the mean over real
tokens is a second output of the model (the first is the last hidden states, whose first row is ``cls``).
What it cannot run is said by :func:`openvino_unsupported`; a DPR encoder without a projection layer
runs its ``pooler`` as ``cls`` (:func:`openvino_pooling`).
"""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import torch

from dpr_components.encoders.model_layout import DPR_KINDS, ModelLayout
from dpr_components.utils.threads import encode_threads, usable_cores

if TYPE_CHECKING:
    from dpr_components.encoders.encoder_settings import EncoderSettings

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
# Rows per infer request on the ring: of 8, 16, 32 and 64, 16 encoded fastest on 2 cores (a
# request's activations stay in cache); sentence-transformers is fastest there too (docs/benchmarks/encoding/peers.md).
REQUEST_ROWS = 16
# Requests in flight per stream: one computing, the others waiting, so that a stream never waits for the caller.
REQUESTS_PER_STREAM = 2
# Model types whose forward takes a ready 4D additive attention mask (transformers uses it as is); a DPR
# encoder's BERT keeps its DPR config.
MASK_4D_MODEL_TYPES = ("bert", "dpr")
INSTALL_HINT = (
    "backend 'openvino' needs the openvino package, a dependency of dpr-components: pip install 'openvino>=2025.1'"
)


class OpenVINOUnavailableError(ImportError):
    """The ``openvino`` package is not installed."""


@dataclass
class HiddenStatesOutput:
    """What :func:`~dpr_components.encoders.pooling.pool` reads from a model's output."""

    last_hidden_state: torch.Tensor
    pooler_output: None = None


Key = TypeVar("Key")


class HiddenStates(torch.nn.Module):
    """The encoder as a function of its three input tensors (what OpenVINO traces).

    For BERT the padding mask goes in as a 4D additive mask, one row per sequence, that transformers
    uses as is: OpenVINO's attention then reads that row instead of an expanded tokens × tokens mask,
    about 5% faster end to end on the same vectors."""

    def __init__(self, model: torch.nn.Module, mean_output: bool = False) -> None:
        super().__init__()
        self.model = model
        self.mean_output = mean_output
        self.mask_4d = getattr(getattr(model, "config", None), "model_type", None) in MASK_4D_MODEL_TYPES

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> Any:
        mask: torch.Tensor = attention_mask
        if self.mask_4d:
            mask = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        hidden = self.model(input_ids=input_ids, attention_mask=mask, token_type_ids=token_type_ids).last_hidden_state
        if not self.mean_output:
            return hidden
        return hidden, pool_mean(hidden, attention_mask)


def openvino_module() -> Any:
    try:
        import openvino
    except ImportError as error:
        raise OpenVINOUnavailableError(INSTALL_HINT) from error
    return openvino


def convert_module(module: torch.nn.Module, input_names: tuple[str, ...]) -> Any:
    """``module`` (called with ``input_names`` as int64 tensors, batch × tokens) as an OpenVINO model
    taking any batch size and sequence length."""
    ov = openvino_module()
    example = tuple(torch.ones(2, 8, dtype=torch.int64) for _ in input_names)
    shapes = [(name, ov.PartialShape([-1, -1]), ov.Type.i64) for name in input_names]
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracing warnings about shapes the model handles at run time
        return ov.convert_model(module.eval(), example_input=example, input=shapes)


def convert_to_openvino(model: torch.nn.Module, mean_output: bool = False) -> Any:
    """``model``'s hidden states as an OpenVINO model taking any batch size and sequence length; with
    ``mean_output``, their mean over the real tokens as a second output."""
    return convert_module(HiddenStates(model.float(), mean_output), INPUT_NAMES)


def native_precision(bf16: bool) -> str:
    """OpenVINO's inference precision: ``bf16`` when asked and this CPU computes bf16 natively, else ``f32``."""
    capabilities = openvino_module().Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    return "bf16" if bf16 and "BF16" in capabilities else "f32"


def compile_for_cpu(converted: Any, precision: str, threads: int, streams: int = 1, perf_count: bool = False) -> Any:
    """``converted`` compiled for this CPU: ``streams`` requests at once, ``threads`` threads in all; with
    ``perf_count``, each request keeps its nodes' times (``get_profiling_info()``)."""
    config = {
        "INFERENCE_PRECISION_HINT": precision,
        "INFERENCE_NUM_THREADS": threads,
        "NUM_STREAMS": streams,
        "PERF_COUNT": perf_count,
    }
    return openvino_module().Core().compile_model(converted, "CPU", config)


class OpenVINOEncoderModel:
    """A passage encoder run by OpenVINO: :meth:`run_queued` turns padded batches into pooled vectors.

    :param converted: an OpenVINO model of the hidden states (:func:`convert_to_openvino`, possibly quantised).
    :param config: the transformers config of the model it came from (the encoder reads its sizes).
    :param precision: OpenVINO's inference precision, ``f32`` or ``bf16``.
    :param threads: OpenVINO's threads (default: ``DPR_ENCODE_THREADS``, else the usable cores).
    :param streams: how many requests compute at once, each on ``threads / streams`` threads (1: one
        batch at a time on all threads).
    :param perf_count: compile with OpenVINO's performance counters: every request's ``get_profiling_info()``
        is appended to :attr:`profiling` (one list of node items per request).
    """

    def __init__(
        self,
        converted: Any,
        config: Any,
        precision: str,
        threads: int | None = None,
        streams: int = 1,
        perf_count: bool = False,
    ) -> None:
        self.config = config
        self.precision = precision
        self.threads = threads or encode_threads() or usable_cores()
        if not 1 <= streams <= self.threads:
            raise ValueError(f"streams must be between 1 and the {self.threads} threads, got {streams}")
        self.streams = streams
        self.perf_count = perf_count
        self.profiling: list[list[Any]] = []
        self._compiled = compile_for_cpu(converted, precision, self.threads, streams, perf_count)

    @classmethod
    def from_torch(
        cls, model: torch.nn.Module, bf16: bool, threads: int | None = None, perf_count: bool = False
    ) -> OpenVINOEncoderModel:
        """``model`` converted, in bf16 when asked and OpenVINO computes bf16 natively here, else fp32, with
        one stream per thread: batches spread over the streams encode faster than one batch on all threads
        (docs/benchmarks/encoding/backends.md)."""
        threads = threads or encode_threads() or usable_cores()
        precision = native_precision(bf16)
        converted = convert_to_openvino(model, mean_output=True)
        return cls(converted, model.config, precision, threads, streams=threads, perf_count=perf_count)

    def run_queued(
        self, batches: Iterable[tuple[Key, dict[str, torch.Tensor]]], pooling: str
    ) -> Iterator[tuple[Key, torch.Tensor]]:
        """Each ``(key, batch)``'s vectors pooled by ``pooling`` (``cls`` or ``mean``), as ``(key, vectors)``
        in input order; only the vectors are copied out of the model. Every batch is one request on a ring
        of ``REQUESTS_PER_STREAM`` per stream, so a stream starts the next batch as soon as it is free while
        the caller handles the last one (faster than cutting each batch in one part per stream and waiting
        for all parts, docs/benchmarks/encoding/peers.md).

        No Python runs on OpenVINO's threads (no completion callbacks): a callback there could run the
        garbage collector, which may free a compiled model from its own thread and abort the process."""
        idle = [self._compiled.create_infer_request() for _ in range(REQUESTS_PER_STREAM * self.streams)]
        in_flight: deque[tuple[Any, Key, dict[str, torch.Tensor]]] = deque()
        try:
            for key, batch in batches:
                if not idle:
                    yield self._collect(*in_flight.popleft(), idle, pooling)
                request = idle.pop()
                request.start_async(model_inputs(batch))
                in_flight.append((request, key, batch))
            while in_flight:
                yield self._collect(*in_flight.popleft(), idle, pooling)
        finally:
            for request, _, _ in in_flight:  # a caller that stopped early: let the requests finish
                request.wait()

    def _collect(
        self, request: Any, key: Key, batch: dict[str, torch.Tensor], idle: list[Any], pooling: str
    ) -> tuple[Key, torch.Tensor]:
        """Wait for ``request``, copy its pooled vectors out (the request is reused), give it back to ``idle``."""
        request.wait()
        if self.perf_count:
            self.profiling.append(list(request.get_profiling_info()))
        if pooling == "cls":
            vectors = np.array(request.get_output_tensor(0).data[:, 0], dtype=np.float32)
        elif len(request.model_outputs) > 1:  # the model's own mean over real tokens
            vectors = np.array(request.get_output_tensor(1).data, dtype=np.float32)
        else:
            hidden = torch.from_numpy(np.array(request.get_output_tensor(0).data, dtype=np.float32))
            vectors = pool_mean(hidden, batch["attention_mask"]).numpy()
        idle.append(request)
        return key, torch.from_numpy(vectors)


def pool_mean(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The mean of ``hidden`` over the real tokens, summed in float32 (a bf16 sum over hundreds of tokens
    loses digits)."""
    hidden = hidden.float()
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def model_inputs(batch: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """The model's three inputs as arrays (segment ids of zeros when the tokenizer made none)."""
    inputs = {name: batch[name].numpy() for name in INPUT_NAMES if name in batch}
    if "token_type_ids" not in inputs:
        inputs["token_type_ids"] = np.zeros_like(inputs["input_ids"])
    return inputs


def openvino_unsupported(layout: ModelLayout, settings: EncoderSettings) -> str | None:
    """Why the OpenVINO back end cannot run this checkpoint with these settings (None: it can). A DPR
    encoder's ``pooler`` is its [CLS] vector unless it has a projection layer, so OpenVINO runs it as ``cls``."""
    pooling = layout.pooling if settings.pooling == "auto" else settings.pooling
    if layout.kind in DPR_KINDS:
        if layout.projection_dim:
            return f"OpenVINO runs DPR encoders without a projection layer; this {layout.kind} checkpoint projects its [CLS] vector"
        return None
    if pooling == "pooler":
        return f"OpenVINO pools by cls or mean; a {layout.kind} checkpoint pooled by 'pooler' runs its pooler layer"
    return None


def openvino_pooling(pooling: str) -> str:
    """The pooling OpenVINO runs for ``pooling``: a DPR ``pooler`` without projection is ``cls``."""
    return "cls" if pooling == "pooler" else pooling
