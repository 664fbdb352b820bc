"""A transformers encoder compiled by OpenVINO: the ``openvino`` back end of passage encoding.

OpenVINO converts the loaded torch model once (a few seconds) and runs it with its own CPU
kernels: on CPUs with native bf16 it computes in bf16 (its vectors are closer to fp32's than
torch's bf16 weights), elsewhere in fp32, which it computes faster than torch here
(docs/benchmarks/backends.md). The model takes any batch size and sequence length; a batch is cut
in one part per thread, each computed on its own thread. Only the
last hidden states leave it; pooling stays in :func:`dpr_components.encoders.text_encoder.pool`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from dpr_components.utils.threads import encode_threads, usable_cores

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
INSTALL_HINT = (
    "backend 'openvino' needs the openvino package, a dependency of dpr-components: pip install 'openvino>=2025.1'"
)


class OpenVINOUnavailableError(ImportError):
    """The ``openvino`` package is not installed."""


@dataclass
class HiddenStatesOutput:
    """What :func:`~dpr_components.encoders.text_encoder.pool` reads from a model's output."""

    last_hidden_state: torch.Tensor
    pooler_output: None = None


class HiddenStates(torch.nn.Module):
    """The encoder as a function of its three input tensors (what OpenVINO traces)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> Any:
        return self.model(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state


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


def convert_to_openvino(model: torch.nn.Module) -> Any:
    """``model``'s hidden states as an OpenVINO model taking any batch size and sequence length."""
    return convert_module(HiddenStates(model.float()), INPUT_NAMES)


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
    """Called like a transformers encoder (``model(**batch).last_hidden_state``), run by OpenVINO.

    :param converted: an OpenVINO model of the hidden states (:func:`convert_to_openvino`, possibly quantised).
    :param config: the transformers config of the model it came from (the encoder reads its sizes).
    :param precision: OpenVINO's inference precision, ``f32`` or ``bf16``.
    :param threads: OpenVINO's threads (default: ``DPR_ENCODE_THREADS``, else the usable cores).
    :param streams: a batch of at least this many rows is cut into ``streams`` parts computed at once,
        each on ``threads / streams`` threads (1: the whole batch on all threads).
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
        one stream per thread: a batch cut in one part per thread encodes a few percent faster than the
        whole batch on all threads (docs/benchmarks/backends.md)."""
        threads = threads or encode_threads() or usable_cores()
        precision = native_precision(bf16)
        return cls(convert_to_openvino(model), model.config, precision, threads, streams=threads, perf_count=perf_count)

    def __call__(self, **batch: torch.Tensor) -> HiddenStatesOutput:
        inputs = {name: batch[name].numpy() for name in INPUT_NAMES if name in batch}
        if "token_type_ids" not in inputs:
            inputs["token_type_ids"] = np.zeros_like(inputs["input_ids"])
        rows = len(inputs["input_ids"])
        parts = np.array_split(np.arange(rows), self.streams if rows >= self.streams else 1)
        # New infer requests per call: requests are not safe to share between threads. Their outputs
        # are copied out of the requests, so they outlive them.
        requests = [self._compiled.create_infer_request() for _ in parts]
        for request, part in zip(requests, parts):
            request.start_async({name: value[part[0] : part[-1] + 1] for name, value in inputs.items()})
        hidden = []
        for request in requests:
            request.wait()
            if self.perf_count:
                self.profiling.append(list(request.get_profiling_info()))
            hidden.append(np.array(request.get_output_tensor(0).data, dtype=np.float32))
        return HiddenStatesOutput(torch.from_numpy(np.concatenate(hidden) if len(hidden) > 1 else hidden[0]))
