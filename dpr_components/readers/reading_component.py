"""What the components that read question and passage together share (``SpanReader``,
``PassageRanker``): a reader folder loaded once per process, the input settings, the documents that
have text, tokenising under the model's lock while the model itself runs unlocked, and the steps of
``run`` and ``run_async`` (each component reads with ``_read`` and answers with ``_results``)."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from typing import Any, Self

from haystack import Document, default_from_dict
from haystack.utils import ComponentDevice

from dpr_components.encoders.bf16_probe import bf16_enabled
from dpr_components.encoders.encoder_settings import Backend, Precision
from dpr_components.encoders.model_locks import model_lock
from dpr_components.readers.inputs import InputSettings, document_title
from dpr_components.readers.model import shared_openvino_reader, shared_reader
from dpr_components.readers.predict import ReaderInput, reader_input
from dpr_components.utils.devices import cpu_only_device, device_parameter
from dpr_components.utils.init_parameters import init_parameters
from dpr_components.utils.validation import check_documents, check_positive_int, check_query


class ReadingComponent:
    """Base of the components that run a DPR reader folder over a question's documents."""

    def _init_reading(
        self,
        model: str,
        top_k: int,
        title_field: str,
        precision: Precision,
        input_settings: InputSettings,
        backend: Backend = "torch",
        device: ComponentDevice | None = None,
    ) -> None:
        """Keep and check the settings every reading component takes (the model loads on warm-up)."""
        self.device = cpu_only_device(type(self).__name__, device)
        if precision not in ("auto", "fp32", "bf16"):
            raise ValueError(f"precision must be auto, fp32 or bf16, got {precision!r}")
        if backend not in ("torch", "openvino"):
            raise ValueError(f"backend must be torch or openvino, got {backend!r}")
        self.backend = backend
        self.model = str(model)
        self.top_k = check_positive_int("top_k", top_k)
        self.title_field = title_field
        self.precision = precision
        self.input_settings = input_settings
        self._reader: Any = None
        self._tokenizer: Any = None

    def warm_up(self) -> None:
        """Load the model once; components of the same folder (back end and precision) in one process share it."""
        if self._reader is not None:
            return
        reader, tokenizer = shared_reader(self.model, bf16_linear=self.backend == "torch" and self.uses_bf16)
        positions = getattr(reader.config, "max_position_embeddings", None)
        if positions is not None and self.input_settings.max_length > positions:
            raise ValueError(
                f"max_length {self.input_settings.max_length} exceeds the {positions} positions "
                f"of the reader {self.model}"
            )
        if self.backend == "openvino":
            reader = shared_openvino_reader(self.model, self.uses_bf16)
        self._reader, self._tokenizer = reader, tokenizer

    def _reading_parameters(self) -> dict[str, Any]:
        """The init parameters every reading component writes to its pipeline data."""
        return {
            **init_parameters(self, "model top_k title_field precision backend"),
            **asdict(self.input_settings),
            **device_parameter(self.device),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild from :meth:`to_dict` output."""
        return default_from_dict(cls, data)

    @property
    def uses_bf16(self) -> bool:
        return bf16_enabled(self.precision)

    def _prepare(self, query: str, documents: list[Document], top_k: int | None) -> tuple[int, list[Document]]:
        """The number of results to return and the documents that have text to read."""
        check_query(query)
        top_k = check_positive_int("top_k", self.top_k if top_k is None else top_k)
        check_documents("documents", documents)
        return top_k, [d for d in documents if isinstance(d.content, str) and d.content.strip()]

    def _run_reading(self, query: str, documents: list[Document], top_k: int | None) -> dict[str, Any]:
        """``run``: the documents that have text read for ``query``, and the results made of that reading."""
        top_k, readable = self._prepare(query, documents, top_k)
        return self._results(query, readable, self._read(query, readable) if readable else [], top_k)

    async def _run_reading_async(self, query: str, documents: list[Document], top_k: int | None) -> dict[str, Any]:
        """``run_async``: as :meth:`_run_reading`, reading in a worker thread so the event loop is not blocked."""
        top_k, readable = self._prepare(query, documents, top_k)
        read = await asyncio.to_thread(self._read, query, readable) if readable else []
        return self._results(query, readable, read, top_k)

    def _read(self, query: str, readable: list[Document]) -> list[Any]:
        """What the model makes of ``readable`` (one or more items per document), for :meth:`_results`."""
        raise NotImplementedError

    def _results(self, query: str, readable: list[Document], read: list[Any], top_k: int) -> dict[str, Any]:
        """The component's output: the best ``top_k`` of what :meth:`_read` made (``read`` is empty
        when no document has text)."""
        raise NotImplementedError

    def _reader_input(self, query: str, readable: list[Document]) -> ReaderInput:
        """``readable`` tokenised with ``query`` into model rows (loads the model on first use). The shared
        tokenizer takes turns; the model, read only, then runs for concurrent requests at once."""
        self.warm_up()
        passages = [(document_title(d, self.title_field), d.content or "") for d in readable]
        with model_lock(("reader", self.model)):
            return reader_input(self._tokenizer, query, passages, self.input_settings)

    @staticmethod
    def _incoming_scores(readable: list[Document], setting: str, value: float) -> list[float]:
        """The documents' scores, which the setting ``setting`` = ``value`` needs (each document must have one)."""
        missing = [d.id for d in readable if not isinstance(d.score, (int, float))]
        if missing:
            raise ValueError(
                f"{setting} {value} needs each document's retrieval score; {len(missing)} have none, e.g. {missing[:3]}"
            )
        return [float(d.score) for d in readable]  # type: ignore[arg-type]
