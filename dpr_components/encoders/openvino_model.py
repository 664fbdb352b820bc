"""A transformers encoder compiled by OpenVINO: the ``openvino`` back end of passage encoding.

OpenVINO converts the loaded torch model once (a few seconds) and runs it with its own CPU
kernels: on CPUs with native bf16 it computes in bf16 (its vectors are closer to fp32's than
torch's bf16 weights), elsewhere in fp32, which it computes faster than torch here
(docs/benchmarks/backends.md). The model takes any batch size and sequence length. Only the
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
INSTALL_HINT = "backend 'openvino' needs the openvino extra: pip install 'dpr-components[openvino]'"


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


def convert_to_openvino(model: torch.nn.Module) -> Any:
    """``model``'s hidden states as an OpenVINO model taking any batch size and sequence length."""
    ov = openvino_module()
    example = tuple(torch.ones(2, 8, dtype=torch.int64) for _ in INPUT_NAMES)
    shapes = [(name, ov.PartialShape([-1, -1]), ov.Type.i64) for name in INPUT_NAMES]
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracing warnings about shapes the model handles at run time
        return ov.convert_model(HiddenStates(model.float()).eval(), example_input=example, input=shapes)


class OpenVINOEncoderModel:
    """Called like a transformers encoder (``model(**batch).last_hidden_state``), run by OpenVINO.

    :param converted: an OpenVINO model of the hidden states (:func:`convert_to_openvino`, possibly quantised).
    :param config: the transformers config of the model it came from (the encoder reads its sizes).
    :param precision: OpenVINO's inference precision, ``f32`` or ``bf16``.
    :param threads: OpenVINO's threads (default: ``DPR_ENCODE_THREADS``, else the usable cores).
    """

    def __init__(self, converted: Any, config: Any, precision: str, threads: int | None = None) -> None:
        self.config = config
        self.precision = precision
        self.threads = threads or encode_threads() or usable_cores()
        self._compiled = (
            openvino_module()
            .Core()
            .compile_model(
                converted, "CPU", {"INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": self.threads}
            )
        )

    @classmethod
    def from_torch(cls, model: torch.nn.Module, bf16: bool, threads: int | None = None) -> OpenVINOEncoderModel:
        """``model`` converted, in bf16 when asked and OpenVINO computes bf16 natively here, else fp32."""
        capabilities = openvino_module().Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
        precision = "bf16" if bf16 and "BF16" in capabilities else "f32"
        return cls(convert_to_openvino(model), model.config, precision, threads)

    def __call__(self, **batch: torch.Tensor) -> HiddenStatesOutput:
        inputs = {name: batch[name].numpy() for name in INPUT_NAMES if name in batch}
        if "token_type_ids" not in inputs:
            inputs["token_type_ids"] = np.zeros_like(inputs["input_ids"])
        # One infer request per call: requests are not safe to share between threads. Its outputs
        # are copied out of the request, so they outlive it.
        hidden = self._compiled.create_infer_request().infer(inputs)[0]
        return HiddenStatesOutput(torch.from_numpy(np.asarray(hidden, dtype=np.float32)))
