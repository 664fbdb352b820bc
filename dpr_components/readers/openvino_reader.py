"""A ``DPRReader`` compiled by OpenVINO: the ``openvino`` back end of ``SpanReader`` and ``PassageRanker``.

The loaded torch reader is converted once; OpenVINO then computes its three logits with its own CPU
kernels, in bf16 where the CPU has native bf16 and in fp32 elsewhere (docs/benchmarks/reader/ranker_latency.md
measures it against torch). Each concurrent request gets its own stream of ``DPR_READ_THREADS`` threads,
so requests do not share threads any more than torch's readers do.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import torch

from dpr_components.encoders.openvino_model import compile_for_cpu, convert_module, native_precision
from dpr_components.readers.plain_reader import ReaderLogits
from dpr_components.readers.selection import selection_logits
from dpr_components.utils.threads import read_threads, usable_cores

READER_INPUTS = ("input_ids", "attention_mask")


class _LogitsOf(torch.nn.Module):
    """The reader as a function of its two input tensors, returning its three logits (what OpenVINO traces)."""

    def __init__(self, reader: torch.nn.Module) -> None:
        super().__init__()
        self.reader = reader

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Any:
        output = self.reader(input_ids=input_ids, attention_mask=attention_mask, return_dict=True)
        return output.start_logits, output.end_logits, output.relevance_logits


class _SelectionOf(torch.nn.Module):
    """The reader's passage-selection logit alone, its last layer computed for [CLS] only (what OpenVINO
    traces for re-ranking; :func:`~dpr_components.readers.selection.selection_logits`)."""

    def __init__(self, reader: torch.nn.Module) -> None:
        super().__init__()
        self.reader = reader

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Any:
        return selection_logits(self.reader, input_ids, attention_mask)


class OpenVINOReader:
    """Called like a transformers ``DPRReader`` (``reader(input_ids=..., attention_mask=...)``), run by OpenVINO.

    :param reader: the loaded torch reader (converted here; it is not changed).
    :param bf16: compute in bf16 when this CPU does natively (else fp32).
    :param threads: threads per request (default: ``DPR_READ_THREADS``, else the query count).
    """

    def __init__(self, reader: torch.nn.Module, bf16: bool, threads: int | None = None) -> None:
        self.config = reader.config
        self.precision = native_precision(bf16)
        self.threads = threads or read_threads()
        self._streams = max(1, usable_cores() // self.threads)
        self._reader = reader.float()
        self._compiled = self._compile(_LogitsOf(self._reader))
        self._selection: Any = None
        self._selection_lock = threading.Lock()

    def _compile(self, module: torch.nn.Module) -> Any:
        converted = convert_module(module, READER_INPUTS)
        return compile_for_cpu(converted, self.precision, self.threads * self._streams, self._streams)

    def compile_selection(self) -> None:
        """Convert the selection-only model once (a ranker's warm-up; the first call would otherwise)."""
        if self._selection is not None:
            return
        with self._selection_lock:
            if self._selection is None:
                self._selection = self._compile(_SelectionOf(self._reader))

    def selection_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The passage-selection logit of each row, from the model whose last layer reads [CLS] alone."""
        self.compile_selection()
        outputs = self._selection.create_infer_request().infer(
            {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()}
        )
        return torch.from_numpy(np.asarray(outputs[0], dtype=np.float32)).view(-1)

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **_: Any) -> ReaderLogits:
        # One infer request per call: requests are not safe to share between threads.
        outputs = self._compiled.create_infer_request().infer(
            {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()}
        )
        start, end, relevance = (torch.from_numpy(np.asarray(outputs[i], dtype=np.float32)) for i in range(3))
        return ReaderLogits(start, end, relevance)
