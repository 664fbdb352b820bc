"""Question and passage encoders: load a checkpoint, pool, normalise, encode in batches.

The folder's layout is read by :mod:`~dpr_components.encoders.model_layout`; the model loads through
:mod:`~dpr_components.encoders.plain_bert` (query-time BERT without transformers' model code),
:mod:`~dpr_components.encoders.transformers_loading` or, compiled from it,
:mod:`~dpr_components.encoders.openvino_model`; :mod:`~dpr_components.encoders.pooling` turns its output
into one vector per input.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import torch
from tqdm.auto import tqdm

from dpr_components.encoders.backend_choice import (
    PROBE_PASSAGES,
    BackendChoice,
    OpenVINOTrial,
    ResolvedBackend,
    lowest_cosine,
    resolve_backend,
)
from dpr_components.encoders.bf16_probe import bf16_enabled
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.model_files import check_model_files, file_digest
from dpr_components.encoders.model_layout import (
    EncoderLoadError,
    ModelLayout,
    check_max_length,
    detect_layout,
    resolve_model_path,
)
from dpr_components.encoders.openvino_model import (
    REQUEST_ROWS,
    OpenVINOEncoderModel,
    openvino_pooling,
    openvino_unsupported,
)
from dpr_components.encoders.plain_bert import load_bert_tokenizer, load_plain_bert
from dpr_components.encoders.pooling import pool
from dpr_components.encoders.transformers_loading import load_tokenizer, load_transformer, transformer_body
from dpr_components.utils.padding import padded_length
from dpr_components.utils.threads import encoding_threads, torch_threads

DEFAULT_MAX_LENGTH = 256  # tokens per input when neither the settings nor the folder say (DPR's length)
BatchCallback = Callable[[np.ndarray, np.ndarray], None]

# Inputs are tokenised and length-sorted this many batches at a time: close to a global sort in
# padding saved, while token lists for a whole corpus never sit in memory at once.
BUCKET_BATCHES = 64


@dataclass
class _Tokens:
    """Unpadded token ids of a window of inputs (``types`` when the tokenizer makes segment ids)."""

    ids: list[list[int]]
    types: list[list[int]] | None


class _BatchReport:
    """Hands finished inputs to ``on_batch`` about ``batch_size`` at a time (the model may compute them
    in smaller batches) and moves the bar."""

    def __init__(self, batch_size: int, out: np.ndarray, on_batch: BatchCallback | None, bar: Any) -> None:
        self.batch_size = batch_size
        self.out = out
        self.on_batch = on_batch
        self.bar = bar
        self.pending: list[np.ndarray] = []
        self.pending_rows = 0

    def done(self, positions: np.ndarray) -> None:
        self.bar.update(len(positions))
        self.pending.append(positions)
        self.pending_rows += len(positions)
        if self.pending_rows >= self.batch_size:
            self._flush()

    def close(self) -> None:
        self._flush()
        self.bar.close()

    def _flush(self) -> None:
        if self.pending and self.on_batch is not None:
            positions = np.concatenate(self.pending)
            self.on_batch(positions, self.out[positions])
        self.pending, self.pending_rows = [], 0


class TextEncoder:
    """Encodes questions (text only) or passages (title + text) into unit float32 vectors (when
    the model normalises) in input order.

    Inputs are sorted by token length and batched so that little compute goes to padding; with
    bf16 the model runs on a bf16 copy of its weights (cast once at load), pooling in float32.
    Loading is lazy and shared: encoders with the same settings in one process share one model.

    With ``plain_torch`` (query-time encoders) a BERT checkpoint runs through
    :mod:`dpr_components.encoders.plain_bert`, giving the same vectors without importing transformers
    (half of a one-question command line's time); checkpoints it does not support load through
    transformers."""

    _shared: ClassVar[dict[tuple[EncoderSettings, bool], tuple[Any, Any, ModelLayout]]] = {}
    _lock = threading.Lock()

    def __init__(
        self, settings: EncoderSettings | None = None, batch_size: int = 32, plain_torch: bool = False
    ) -> None:
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.settings = settings or EncoderSettings()
        if self.settings.pooling not in ("auto", "cls", "mean", "pooler"):
            raise ValueError(f"pooling must be auto, cls, mean or pooler, got {self.settings.pooling!r}")
        if self.settings.precision not in ("auto", "fp32", "bf16"):
            raise ValueError(f"precision must be auto, fp32 or bf16, got {self.settings.precision!r}")
        if self.settings.backend not in ("auto", "torch", "openvino"):
            raise ValueError(f"backend must be auto, torch or openvino, got {self.settings.backend!r}")
        if self.settings.title_mode not in ("pair", "prefix", "none"):
            raise ValueError(f"title_mode must be pair, prefix or none, got {self.settings.title_mode!r}")
        check_max_length(self.settings.max_length, None)
        self.batch_size = batch_size
        self.plain_torch = plain_torch
        self._model: Any = None
        self._tokenizer: Any = None
        self._layout: ModelLayout | None = None

    @classmethod
    def is_shared(cls, settings: EncoderSettings, plain_torch: bool = False) -> bool:
        """Whether a model of these settings is loaded in this process."""
        return (settings, plain_torch) in cls._shared

    @classmethod
    def forget(cls, settings: EncoderSettings, plain_torch: bool = False) -> None:
        """Let the model of these settings go (encoders holding it keep it)."""
        with cls._lock:
            cls._shared.pop((settings, plain_torch), None)

    def load(self) -> None:
        """Load model and tokenizer once (idempotent and cheap after the first call); ``backend="auto"``
        is resolved first (:mod:`dpr_components.encoders.backend_choice`)."""
        if self._model is not None:
            return
        key = (replace(self.settings, backend=self.backend), self.plain_torch)
        with TextEncoder._lock:
            if key not in TextEncoder._shared:
                layout = detect_layout(resolve_model_path(self.settings.model))
                TextEncoder._shared[key] = self._load_plain(layout) or self._load_transformers(layout)
            self._model, self._tokenizer, self._layout = TextEncoder._shared[key]
        check_max_length(
            self.settings.max_length, self._layout.max_positions, f"max_length (for {self._layout.transformer_path})"
        )

    def backend_choice(self) -> BackendChoice:
        """What runs the model (``settings.backend``, or what ``auto`` stands for here) and why."""
        trial = OpenVINOTrial(
            unsupported=lambda: openvino_unsupported(
                detect_layout(resolve_model_path(self.settings.model)), self.settings
            ),
            probe_cosine=lambda: openvino_probe_cosine(self.settings),
        )
        return resolve_backend(self.settings.backend, self.settings, self.settings.model, self.plain_torch, trial)

    def _load_transformers(self, layout: ModelLayout) -> tuple[Any, Any, ModelLayout]:
        model = load_transformer(layout)
        if self.backend == "openvino":
            return self._openvino_model(model, layout), load_tokenizer(layout), layout
        if self.uses_bf16:
            # Cast once instead of autocasting every call: about 1.3x faster than autocast.
            model = model.to(torch.bfloat16)
        return model, load_tokenizer(layout), layout

    def _openvino_model(self, model: Any, layout: ModelLayout) -> Any:
        """``model`` compiled by OpenVINO (bf16 where this encoder computes in bf16 and the CPU has it)."""
        unsupported = openvino_unsupported(layout, self.settings)
        if unsupported:
            raise EncoderLoadError(
                f"backend 'openvino': {unsupported} ({layout.transformer_path}): use backend 'torch'"
            )
        return OpenVINOEncoderModel.from_torch(transformer_body(model), bf16=self.uses_bf16)

    def _load_plain(self, layout: ModelLayout) -> tuple[Any, Any, ModelLayout] | None:
        """The checkpoint as :class:`PlainBert` when ``plain_torch`` and supported, else None."""
        if not self.plain_torch or self.backend != "torch":
            return None
        check_model_files(layout.transformer_path)  # a damaged file is reported as transformers' path reports it
        pooling = layout.pooling if self.settings.pooling == "auto" else self.settings.pooling
        model = load_plain_bert(layout.transformer_path, layout.kind, self.uses_bf16)
        if model is None or (pooling == "pooler" and not model.is_dpr and not model.config.has_pooler):
            return None
        tokenizer = load_bert_tokenizer(layout.transformer_path)
        return (model, tokenizer, layout) if tokenizer is not None else None

    @property
    def layout(self) -> ModelLayout:
        self.load()
        assert self._layout is not None
        return self._layout

    @property
    def pooling(self) -> str:
        return self.layout.pooling if self.settings.pooling == "auto" else self.settings.pooling

    @property
    def normalize(self) -> bool:
        return self.layout.normalize if self.settings.normalize is None else self.settings.normalize

    @property
    def max_length(self) -> int:
        default = min(DEFAULT_MAX_LENGTH, self.layout.max_positions or DEFAULT_MAX_LENGTH)
        return self.settings.max_length or self.layout.max_length or default

    @property
    def backend(self) -> ResolvedBackend:
        """The back end that runs the model: ``settings.backend``, or what ``auto`` stands for here."""
        return self.backend_choice().backend

    @property
    def uses_bf16(self) -> bool:
        return bf16_enabled(self.settings.precision)

    @property
    def dim(self) -> int:
        self.load()
        config = self._model.config
        return int(getattr(config, "projection_dim", 0) or config.hidden_size)

    def fingerprint(self) -> str:
        """Identifies the vectors this encoder makes: weights plus every setting that changes them."""
        path = self.layout.transformer_path
        weights = sorted(path.glob("*.safetensors")) or sorted(path.glob("*.bin"))
        parts = {
            "weights": [file_digest(w) for w in weights],
            "kind": self.layout.kind,
            "pooling": self.pooling,
            "normalize": self.normalize,
            "max_length": self.max_length,
            "title_mode": self.settings.title_mode,
            # bf16 weights make (slightly) other vectors than the earlier bf16 autocast; fp32 keeps
            # its old value so fp32 caches stay valid.
            "bf16": "weights" if self.uses_bf16 else False,
        }
        if self.backend != "torch":  # torch keeps the fingerprint it had before back ends existed
            parts["backend"] = self.backend
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]

    def encode_questions(self, questions: list[str], show_progress: bool = False) -> np.ndarray:
        return self._encode(questions, None, show_progress, "questions")

    def encode_passages(
        self,
        texts: list[str],
        titles: list[str | None] | None = None,
        show_progress: bool = False,
        on_batch: BatchCallback | None = None,
    ) -> np.ndarray:
        """Vectors of ``texts`` (with ``titles``); ``on_batch(positions, vectors)`` receives each
        batch as soon as it is encoded (e.g. to save it), ``positions`` indexing ``texts``."""
        if titles is not None and len(titles) != len(texts):
            raise ValueError(f"got {len(texts)} passages but {len(titles)} titles")
        return self._encode(texts, titles, show_progress, "passages", on_batch)

    def _encode(
        self,
        texts: list[str],
        titles: list[str | None] | None,
        show_progress: bool,
        unit: str,
        on_batch: BatchCallback | None = None,
    ) -> np.ndarray:
        self.load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # A question on few threads, a batch of passages on many (dpr_components/utils/threads.py).
        with torch_threads(encoding_threads(len(texts))):
            return self._encode_batches(texts, titles, show_progress, unit, on_batch)

    @torch.inference_mode()
    def _encode_batches(
        self,
        texts: list[str],
        titles: list[str | None] | None,
        show_progress: bool,
        unit: str,
        on_batch: BatchCallback | None,
    ) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        bar = tqdm(total=len(texts), unit=unit[:-1], desc=f"Encoding {unit}", disable=not show_progress)
        report = _BatchReport(self.batch_size, out, on_batch, bar)
        if isinstance(self._model, OpenVINOEncoderModel):
            batches = self._batches(texts, titles, self.rows_per_batch)
            for idx, pooled in self._model.run_queued(batches, openvino_pooling(self.pooling)):
                out[idx] = self._vectors(pooled)
                report.done(idx)
        else:
            for idx, batch in self._batches(texts, titles, self.batch_size):
                out[idx] = self._vectors(pool(self._model, batch, self.pooling))
                report.done(idx)
        report.close()
        return out

    @property
    def rows_per_batch(self) -> int:
        """How many inputs the model computes at once: ``batch_size``, or at most
        :data:`~dpr_components.encoders.openvino_model.REQUEST_ROWS` on OpenVINO's queue."""
        self.load()
        if isinstance(self._model, OpenVINOEncoderModel):
            return min(self.batch_size, REQUEST_ROWS)
        return self.batch_size

    def _batches(
        self, texts: list[str], titles: list[str | None] | None, rows: int
    ) -> Iterator[tuple[np.ndarray, dict[str, torch.Tensor]]]:
        """Padded batches of ``rows`` inputs with their input positions. Length bucketing: within a
        window, longest first, so a batch pads to about its own length."""
        for offset, tokens in self._token_windows(texts, titles):
            order = np.argsort([-len(ids) for ids in tokens.ids], kind="stable")
            for start in range(0, len(order), rows):
                local = order[start : start + rows]
                yield local + offset, self._collate(tokens, local)

    def token_lengths(self, texts: list[str], titles: list[str | None] | None = None) -> list[int]:
        """Each passage's token count as :meth:`encode_passages` feeds it to the model (after truncation);
        batches are cut from windows of ``batch_size * BUCKET_BATCHES`` inputs sorted by this length."""
        self.load()
        return [len(ids) for _, tokens in self._token_windows(texts, titles) for ids in tokens.ids]

    def _token_windows(self, texts: list[str], titles: list[str | None] | None) -> Iterator[tuple[int, _Tokens]]:
        """The inputs tokenised a window of ``batch_size * BUCKET_BATCHES`` at a time, with each window's offset."""
        firsts, seconds = self._inputs(texts, titles)
        window = self.batch_size * BUCKET_BATCHES
        for offset in range(0, len(texts), window):
            yield offset, self._tokenize(firsts[offset : offset + window], seconds[offset : offset + window])

    def _inputs(self, texts: list[str], titles: list[str | None] | None) -> tuple[list[str], list[str | None]]:
        if titles is None or self.settings.title_mode == "none":
            return list(texts), [None] * len(texts)
        if self.settings.title_mode == "prefix":
            return [f"{title}. {text}" if title else text for title, text in zip(titles, texts, strict=True)], [
                None
            ] * len(texts)
        # DPR's passage input: [CLS] title [SEP] text [SEP]
        firsts = [title if title else text for title, text in zip(titles, texts, strict=True)]
        seconds = [text if title else None for title, text in zip(titles, texts, strict=True)]
        return firsts, seconds

    def _tokenize(self, firsts: list[str], seconds: list[str | None]) -> _Tokens:
        """Token ids without padding; pairs and single texts (passages without a title) apart."""
        pairs = [i for i, s in enumerate(seconds) if s is not None]
        singles = [i for i, s in enumerate(seconds) if s is None]
        ids: list[list[int]] = [[] for _ in firsts]
        types: list[list[int]] | None = None
        for group, second in ((pairs, True), (singles, False)):
            if not group:
                continue
            encoded = self._tokenizer(
                [firsts[i] for i in group],
                [seconds[i] for i in group] if second else None,
                truncation="only_second" if second else True,
                max_length=self.max_length,
                return_attention_mask=False,
            )
            for i, row in zip(group, encoded["input_ids"], strict=True):
                ids[i] = row
            if "token_type_ids" in encoded:
                types = types if types is not None else [[] for _ in firsts]
                for i, row in zip(group, encoded["token_type_ids"], strict=True):
                    types[i] = row
        return _Tokens(ids, types)

    def _collate(self, tokens: _Tokens, rows: np.ndarray) -> dict[str, torch.Tensor]:
        """Pad the chosen rows to the longest among them, rounded up (:func:`padded_length`), on the
        tokenizer's padding side."""
        length = padded_length(max(len(tokens.ids[i]) for i in rows), self.max_length)
        pad_id = self._tokenizer.pad_token_id or 0
        input_ids = np.full((len(rows), length), pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), length), dtype=np.int64)
        types = np.zeros((len(rows), length), dtype=np.int64) if tokens.types is not None else None
        left = getattr(self._tokenizer, "padding_side", "right") == "left"
        for r, i in enumerate(rows):
            n = len(tokens.ids[i])
            span = slice(length - n, length) if left else slice(0, n)
            input_ids[r, span] = tokens.ids[i]
            mask[r, span] = 1
            if types is not None and tokens.types is not None:
                types[r, span] = tokens.types[i]
        batch = {"input_ids": torch.from_numpy(input_ids), "attention_mask": torch.from_numpy(mask)}
        if types is not None:
            batch["token_type_ids"] = torch.from_numpy(types)
        return batch

    def _vectors(self, pooled: torch.Tensor) -> np.ndarray:
        """Pooled outputs as float32 vectors, unit length when the model normalises; NaN refused."""
        vectors = pooled.float()
        if self.normalize:
            vectors = torch.nn.functional.normalize(vectors, dim=-1)
        if not bool(torch.isfinite(vectors).all()):
            raise EncoderLoadError(
                f"the encoder {self.layout.transformer_path} computed NaN or infinite vectors: its weights are "
                "not usable (trained with too high a learning rate?)"
            )
        return vectors.numpy()


def openvino_probe_cosine(settings: EncoderSettings) -> float:
    """The lowest cosine between OpenVINO's vectors (at ``settings.precision``) and torch fp32's on the probe passages;
    the fp32 model is let go after, unless something else loaded it."""
    titles = [title for title, _ in PROBE_PASSAGES]
    texts = [text for _, text in PROBE_PASSAGES]
    reference_settings = replace(settings, backend="torch", precision="fp32")
    had_reference = TextEncoder.is_shared(reference_settings)
    candidate = TextEncoder(replace(settings, backend="openvino"), batch_size=4)
    reference = TextEncoder(reference_settings, batch_size=4)
    try:
        return lowest_cosine(candidate.encode_passages(texts, titles), reference.encode_passages(texts, titles))
    finally:
        if not had_reference:
            TextEncoder.forget(reference_settings)
