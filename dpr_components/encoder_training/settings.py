"""Every setting of a training run, validated, and serialisable to JSON.

Defaults follow DPR's NQ recipe where it fits a CPU (Karpukhin et al. 2020, section 5 and
facebookresearch/DPR ``conf/train/biencoder_nq.yaml``: AdamW, learning rate 2e-5, linear
warm-up then decay, dropout 0.1, gradient clipping at norm 2.0, no weight decay, one BM25 hard
negative per question shared across the batch, sequence length 256). DPR's batch (128 on 8
GPUs) and 40 epochs are out of reach here; the batch size and epochs are set per run."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from dpr_components.encoder_training.batching import NEGATIVE_SOURCES
from dpr_components.encoder_training.losses import LOSSES
from dpr_components.encoder_training.losses.similarity import SIMILARITIES
from dpr_components.encoders.text_encoder import BUNDLED_MINILM
from dpr_components.runs.setting_types import check_setting_types
from dpr_components.utils.similarity import canonical_similarity

# Settings that may change when a run is resumed (they do not change what is computed).
RESUMABLE_CHANGES = frozenset(
    {"threads", "checkpoint_every", "keep_checkpoints", "log_every", "fp16_export", "max_nonfinite_steps"}
)
_METRIC = re.compile(r"^(avg_rank|mrr|top\d+)$")


@dataclass
class EncoderTrainingSettings:
    """Settings of one run. Less obvious ones:

    ``negatives``: negatives per question from ``negative_source`` (``hard``, ``random``, ``gold``),
    shared by the whole batch when ``in_batch`` (else DPR's 1-of-N). ``scale``: NLL score
    multiplier, default 20 for cosine and 1 otherwise. ``validate_every``: steps between
    validations (None: after each epoch), plus one before training when ``validate_at_start``.
    ``selection_metric``: ``mrr``, ``top<k>`` or ``avg_rank`` (lower is better) picks ``best/``;
    ``patience``: validations without improvement before stopping early.
    ``train_passage_encoder``: false trains E_Q alone against fixed E_P vectors
    (``frozen_passages.py``): an index built with E_P stays valid.
    ``max_nonfinite_steps``: steps whose loss or gradient norm is NaN or infinite that are skipped
    (weights not updated) before the run stops with an error; 0 stops at the first (``finite.py``)."""

    # model
    model: str = BUNDLED_MINILM
    passage_model: str | None = None
    tie_encoders: bool = False
    train_passage_encoder: bool = True
    pooling: str = "auto"
    max_length: int = 256
    dropout: float | None = 0.1
    bf16: bool = False
    # objective
    loss: str = "nll"
    similarity: str = "dot"
    scale: float | None = None
    margin: float = 1.0
    # batches
    batch_size: int = 32
    negatives: int = 1
    negative_source: str = "hard"
    in_batch: bool = True
    mask_answer_hits: bool = False
    grad_cache_chunk: int | None = None  # GradCache: exact big-batch gradient in the memory of one chunk
    accumulation_steps: int = 1  # averages smaller batches' gradients: adds no in-batch negatives
    # optimisation
    epochs: int = 3
    max_steps: int | None = None
    learning_rate: float = 2e-5
    weight_decay: float = 0.0
    adam_eps: float = 1e-8
    warmup_ratio: float = 0.1
    warmup_steps: int | None = None
    max_grad_norm: float = 2.0
    max_nonfinite_steps: int = 0
    seed: int = 12345
    threads: int | None = None
    # checkpoints, logs, validation
    checkpoint_every: int = 200
    keep_checkpoints: int = 2
    log_every: int = 10
    validate_every: int | None = None
    validate_at_start: bool = True
    val_questions: int = 300
    val_hard_negatives: int = 5
    val_pool_size: int = 3000
    selection_metric: str = "mrr"
    patience: int | None = None
    fp16_export: bool = False

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        check_setting_types(self, "training setting")
        positive = (
            "max_length",
            "batch_size",
            "accumulation_steps",
            "epochs",
            "checkpoint_every",
            "keep_checkpoints",
            "log_every",
            "val_questions",
        )
        for name in positive:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"training setting {name!r} must be a positive integer, got {value!r}")
        for name in ("max_steps", "validate_every", "grad_cache_chunk", "patience", "threads", "warmup_steps"):
            value = getattr(self, name)
            smallest = 0 if name == "warmup_steps" else 1
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < smallest):
                raise ValueError(f"training setting {name!r} must be an integer >= {smallest} or null, got {value!r}")
        for name in ("negatives", "val_hard_negatives", "val_pool_size", "max_nonfinite_steps"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ValueError(f"training setting {name!r} must be an integer >= 0, got {getattr(self, name)!r}")
        if self.loss not in LOSSES:
            raise ValueError(f"training setting 'loss' must be one of {LOSSES}, got {self.loss!r}")
        if self.similarity not in SIMILARITIES:
            raise ValueError(f"training setting 'similarity' must be one of {SIMILARITIES}, got {self.similarity!r}")
        if self.negative_source not in NEGATIVE_SOURCES:
            raise ValueError(
                f"training setting 'negative_source' must be one of {NEGATIVE_SOURCES}, got {self.negative_source!r}"
            )
        if self.pooling not in ("auto", "cls", "mean", "pooler"):
            raise ValueError(f"training setting 'pooling' must be auto, cls, mean or pooler, got {self.pooling!r}")
        if not self.in_batch and self.negatives == 0:
            raise ValueError("training without in-batch negatives (1-of-N) needs negatives >= 1")
        if self.dropout is not None and not 0 <= self.dropout < 1:
            raise ValueError(f"training setting 'dropout' must be in [0, 1), got {self.dropout}")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"training setting 'warmup_ratio' must be in [0, 1), got {self.warmup_ratio}")
        for name in ("learning_rate", "max_grad_norm", "adam_eps", "scale", "margin"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"training setting {name!r} must be positive, got {value!r}")
        for name in ("weight_decay", "seed"):
            if getattr(self, name) < 0:
                raise ValueError(f"training setting {name!r} must be >= 0, got {getattr(self, name)!r}")
        if not self.train_passage_encoder:
            if self.tie_encoders:
                raise ValueError("train_passage_encoder: false needs two encoders; tie_encoders shares one")
            if self.grad_cache_chunk:
                raise ValueError("train_passage_encoder: false encodes only questions; grad_cache_chunk is not needed")
        if self.tie_encoders and self.passage_model:
            raise ValueError("tie_encoders uses one encoder: do not set passage_model")
        if not _METRIC.match(self.selection_metric):
            raise ValueError(
                f"training setting 'selection_metric' must be 'avg_rank', 'mrr' or 'top<k>', got {self.selection_metric!r}"
            )

    @property
    def normalize(self) -> bool:
        """Cosine training yields unit vectors, so the exported encoders normalise; dot and L2 do not."""
        return canonical_similarity(self.similarity) == "cosine"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EncoderTrainingSettings:
        if not isinstance(data, dict):
            raise ValueError(
                f"training settings must be a mapping of setting names to values, got {type(data).__name__}"
            )
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown training settings {unknown}; known settings are {sorted(known)}")
        return cls(**data)
