"""Question and passage encoders: load a checkpoint, pool, normalise, encode in batches.

Supported checkpoint folders (detected from their files, never guessed):
- the bundled all-MiniLM-L6-v2 (``bundled:all-MiniLM-L6-v2``), a sentence-transformers folder;
- Hugging Face DPR layout (``DPRQuestionEncoder`` / ``DPRContextEncoder``, e.g. facebook/dpr-*);
- sentence-transformers folders (pooling and normalisation read from their module files);
- plain BERT-like folders (``AutoModel``), CLS pooling unless told otherwise;
- folders written by :func:`save_encoder` (an ``encoder_config.json`` sidecar records pooling).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal, cast

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
from dpr_components.encoders.bundled import (
    BUNDLED_MINILM,
    BUNDLED_PREFIX,
    BundledModelError,
    model_folder,
)
from dpr_components.encoders.model_files import (
    CONFIG_LIMITS,
    LOAD_ERRORS,
    ModelFileError,
    check_finite_weights,
    check_model_files,
    describe_load_error,
    first_line,
    quiet_transformers,
    weight_files,
)
from dpr_components.encoders.openvino_model import REQUEST_ROWS, OpenVINOEncoderModel, pool_mean
from dpr_components.encoders.plain_bert import (
    PlainBert,
    load_bert_tokenizer,
    load_plain_bert,
)
from dpr_components.utils.threads import encoding_threads, torch_threads
from dpr_components.utils.validation import short_repr

logger = logging.getLogger(__name__)

SIDECAR_FILE = "encoder_config.json"
DEFAULT_MAX_LENGTH = 256  # tokens per input when neither the settings nor the folder say (DPR's length)

Pooling = Literal["auto", "cls", "mean", "pooler"]
Precision = Literal["auto", "fp32", "bf16"]
Backend = Literal["auto", "torch", "openvino"]
TitleMode = Literal["pair", "prefix", "none"]
BatchCallback = Callable[[np.ndarray, np.ndarray], None]

# Weights a plain encoder may lack without being broken: the pooler is unused by CLS/mean pooling.
_HARMLESS_MISSING = ("pooler.", "embeddings.position_ids")


class EncoderLoadError(ModelFileError):
    """A model folder is missing, of an unknown layout, or would load with random weights."""


def resolve_model_path(model: str) -> Path:
    """Turn a model reference (``bundled:<name>`` or a folder path) into an existing folder."""
    try:
        return model_folder(model, "encoder", f"give a local folder or a bundled model such as {BUNDLED_MINILM!r}")
    except BundledModelError as error:
        raise EncoderLoadError(str(error)) from None


# The Hugging Face DPR layout: a BERT wrapped as DPRQuestionEncoder or DPRContextEncoder.
DPR_KINDS = ("dpr_question", "dpr_context")


@dataclass(frozen=True)
class ModelLayout:
    """What a checkpoint folder holds and how to pool it."""

    kind: Literal["dpr_question", "dpr_context", "sentence_transformers", "hf"]
    transformer_path: Path
    pooling: Literal["cls", "mean", "pooler"]
    normalize: bool
    max_length: int | None
    max_positions: int | None = None  # the model's max_position_embeddings, when its config.json gives it
    projection_dim: int = 0  # a DPR encoder's projection of its [CLS] vector (0: none)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise EncoderLoadError(f"cannot read {path}: {error}") from error


def check_max_length(value: Any, positions: int | None, name: str = "max_length") -> int | None:
    """``value`` when it is None or a positive integer within the model's ``positions`` (or, when
    they are unknown, within any model's); otherwise an :class:`EncoderLoadError` naming ``name``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EncoderLoadError(f"{name} must be a positive integer, got {short_repr(value, 40)}")
    limit = positions or CONFIG_LIMITS["max_position_embeddings"]
    if value > limit:
        bound = f"the model's {positions:,} positions (max_position_embeddings)" if positions else f"{limit:,} tokens"
        raise EncoderLoadError(f"{name} is {value:,}, more than {bound}")
    return value


def _positions(config: dict[str, Any]) -> int | None:
    value = config.get("max_position_embeddings")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _read_sidecar(path: Path, positions: int | None) -> dict[str, Any]:
    """The ``encoder_config.json`` of ``path`` (empty without one), its values checked."""
    file = path / SIDECAR_FILE
    if not file.is_file():
        return {}
    sidecar = _read_json(file)
    if not isinstance(sidecar, dict):
        raise EncoderLoadError(f"{file} is not a JSON object of encoder settings")
    if sidecar.get("pooling", "cls") not in ("cls", "mean", "pooler"):
        raise EncoderLoadError(f"{file}: pooling must be cls, mean or pooler, got {short_repr(sidecar['pooling'], 40)}")
    if not isinstance(sidecar.get("normalize", False), bool):
        raise EncoderLoadError(f"{file}: normalize must be true or false, got {short_repr(sidecar['normalize'], 40)}")
    check_max_length(sidecar.get("max_length"), positions, f"{file}: max_length")
    return sidecar


def detect_layout(path: Path) -> ModelLayout:
    """Inspect a checkpoint folder and describe it."""
    config = _read_json(path / "config.json")
    if not isinstance(config, dict):
        raise EncoderLoadError(f"{path / 'config.json'} is not a JSON object: not a transformers configuration")
    architectures = config.get("architectures") or []
    positions = _positions(config)
    sidecar = _read_sidecar(path, positions)
    if "DPRQuestionEncoder" in architectures or "DPRContextEncoder" in architectures:
        kind: Literal["dpr_question", "dpr_context"] = (
            "dpr_question" if "DPRQuestionEncoder" in architectures else "dpr_context"
        )
        return ModelLayout(
            kind=kind,
            transformer_path=path,
            pooling=sidecar.get("pooling", "pooler"),
            normalize=bool(sidecar.get("normalize", False)),
            max_length=sidecar.get("max_length"),
            max_positions=positions,
            projection_dim=_projection_dim(config, path),
        )
    if config.get("model_type") == "dpr":
        raise EncoderLoadError(
            f"{path} is a DPR checkpoint of architecture {architectures}; only DPRQuestionEncoder and "
            "DPRContextEncoder folders can encode (a DPRReader is a reader)"
        )
    if (path / "modules.json").is_file():
        return _sentence_transformers_layout(path, sidecar)
    return ModelLayout(
        kind="hf",
        transformer_path=path,
        pooling=sidecar.get("pooling", "cls"),
        normalize=bool(sidecar.get("normalize", False)),
        max_length=sidecar.get("max_length"),
        max_positions=positions,
    )


def _projection_dim(config: dict[str, Any], path: Path) -> int:
    """A DPR config's ``projection_dim`` (0 when absent or null); an error naming the file when it is not a count."""
    value = config.get("projection_dim") or 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise EncoderLoadError(f"{path / 'config.json'}: projection_dim must be a whole number >= 0, got {value!r}")
    return value


def _sentence_transformers_layout(path: Path, sidecar: dict[str, Any]) -> ModelLayout:
    modules = _read_json(path / "modules.json")
    transformer_path, pooling, normalize = path, "cls", False
    for module in modules:
        module_type = str(module.get("type", ""))
        module_path = path / module.get("path", "")
        if module_type.endswith(".Transformer"):
            transformer_path = module_path
        elif module_type.endswith(".Pooling"):
            pooling_config = _read_json(module_path / "config.json")
            if pooling_config.get("pooling_mode_mean_tokens"):
                pooling = "mean"
            elif pooling_config.get("pooling_mode_cls_token"):
                pooling = "cls"
            else:
                raise EncoderLoadError(f"{module_path}: only CLS or mean pooling is supported")
        elif module_type.endswith(".Normalize"):
            normalize = True
    transformer_config = path / "config.json" if transformer_path == path else transformer_path / "config.json"
    positions = _positions(_read_json(transformer_config)) if transformer_config.is_file() else None
    return ModelLayout(
        kind="sentence_transformers",
        transformer_path=transformer_path,
        pooling=sidecar.get("pooling", pooling),
        normalize=bool(sidecar.get("normalize", normalize)),
        max_length=sidecar.get("max_length", _max_seq_length(path, positions)),
        max_positions=positions,
    )


def _max_seq_length(path: Path, positions: int | None) -> int | None:
    """``max_seq_length`` of a sentence-transformers folder's ``sentence_bert_config.json``, checked."""
    file = path / "sentence_bert_config.json"
    if not file.is_file():
        return None
    config = _read_json(file)
    if not isinstance(config, dict):
        raise EncoderLoadError(f"{file} is not a JSON object of sentence-transformers settings")
    return check_max_length(config.get("max_seq_length"), positions, f"{file}: max_seq_length")


def _load_transformer(layout: ModelLayout) -> torch.nn.Module:
    from transformers import AutoModel, DPRContextEncoder, DPRQuestionEncoder, PreTrainedModel

    folder = layout.transformer_path
    check_model_files(folder)
    model_class = {"dpr_question": DPRQuestionEncoder, "dpr_context": DPRContextEncoder}.get(layout.kind, AutoModel)
    try:
        with quiet_transformers():
            # transformers types from_pretrained as returning the model alone, not (model, info)
            model, info = cast(
                tuple[PreTrainedModel, dict[str, Any]],
                model_class.from_pretrained(str(folder), output_loading_info=True, trust_remote_code=False),
            )
    except LOAD_ERRORS as error:
        raise EncoderLoadError(describe_load_error(folder, error)) from error
    missing = [key for key in info.get("missing_keys", []) if not any(h in key for h in _HARMLESS_MISSING)]
    if missing:
        files = ", ".join(p.name for p in weight_files(folder))
        raise EncoderLoadError(
            f"the weights in {folder} ({files}) are not those of the {model.config.model_type!r} architecture "
            f"its config.json names ({len(missing)} missing, e.g. {sorted(missing)[:3]}); it would run with "
            "random weights"
        )
    check_finite_weights(folder, model.state_dict())
    return model.eval()


def load_tokenizer(layout: ModelLayout) -> Any:
    """The tokenizer of the transformer in ``layout``; ``EncoderLoadError`` naming the folder when it cannot be loaded."""
    from transformers import AutoTokenizer

    folder = layout.transformer_path
    try:
        with quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
    except LOAD_ERRORS as error:
        raise EncoderLoadError(
            f"cannot load the tokenizer of {folder} (tokenizer.json, vocab.txt): {first_line(error)}"
        ) from error
    if len(tokenizer) < 100:
        raise EncoderLoadError(
            f"the tokenizer of {folder} has only {len(tokenizer)} tokens: its tokenizer files (tokenizer.json, "
            "vocab.txt) are missing or incomplete"
        )
    return tokenizer


def bf16_supported() -> bool:
    """True when this CPU has native bf16 matrix instructions (then bf16 inference is about 2x faster)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def bf16_enabled(precision: Precision) -> bool:
    """Whether ``precision`` means bf16 compute here: ``bf16``, or ``auto`` on a CPU with native bf16."""
    return precision == "bf16" or (precision == "auto" and bf16_supported())


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class EncoderSettings:
    """Everything that changes the vectors an encoder produces."""

    model: str = BUNDLED_MINILM
    pooling: Pooling = "auto"
    normalize: bool | None = None
    max_length: int | None = None
    title_mode: TitleMode = "pair"
    precision: Precision = "auto"
    backend: Backend = "torch"


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

    _shared: dict[tuple[EncoderSettings, bool], tuple[Any, Any, ModelLayout]] = {}
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
        model = _load_transformer(layout)
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
            return [f"{title}. {text}" if title else text for title, text in zip(titles, texts)], [None] * len(texts)
        # DPR's passage input: [CLS] title [SEP] text [SEP]
        firsts = [title if title else text for title, text in zip(titles, texts)]
        seconds = [text if title else None for title, text in zip(titles, texts)]
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
            for i, row in zip(group, encoded["input_ids"]):
                ids[i] = row
            if "token_type_ids" in encoded:
                types = types if types is not None else [[] for _ in firsts]
                for i, row in zip(group, encoded["token_type_ids"]):
                    types[i] = row
        return _Tokens(ids, types)

    def _collate(self, tokens: _Tokens, rows: np.ndarray) -> dict[str, torch.Tensor]:
        """Pad the chosen rows to the longest among them (on the tokenizer's padding side)."""
        length = max(len(tokens.ids[i]) for i in rows)
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

    def to_settings_dict(self) -> dict[str, Any]:
        return {**asdict(self.settings), "batch_size": self.batch_size}


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


def transformer_body(model: torch.nn.Module) -> torch.nn.Module:
    """The BERT inside a DPR encoder (``model`` itself for any other checkpoint)."""
    for wrapper in ("question_encoder", "ctx_encoder"):
        if hasattr(model, wrapper):
            return cast(torch.nn.Module, getattr(model, wrapper).bert_model)
    return model


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


def pool(model: torch.nn.Module | PlainBert, batch: Any, pooling: str) -> torch.Tensor:
    """Run the model and pool one vector per input (``pooler`` is DPR's pooler_output)."""
    if isinstance(model, PlainBert):
        hidden = model.last_hidden_state(batch)
        if pooling == "pooler":
            return model.pooler_output(hidden)
    elif hasattr(model, "question_encoder") or hasattr(model, "ctx_encoder"):
        inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        output = model(**inputs, output_hidden_states=pooling != "pooler")
        if pooling == "pooler":
            return output.pooler_output
        hidden = output.hidden_states[-1]
    else:
        output = model(**batch)
        hidden = output.last_hidden_state
        if pooling == "pooler":
            if getattr(output, "pooler_output", None) is None:
                raise EncoderLoadError("this model has no pooler: use pooling 'cls' or 'mean'")
            return output.pooler_output
    if pooling == "cls":
        return hidden[:, 0]
    return pool_mean(hidden, batch["attention_mask"])
