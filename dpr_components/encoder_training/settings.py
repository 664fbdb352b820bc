"""Every setting of a training run, validated, and serialisable to JSON.

Defaults follow DPR's NQ recipe where it fits a CPU (Karpukhin et al. 2020, section 5 and
facebookresearch/DPR ``conf/train/biencoder_nq.yaml``: AdamW, learning rate 2e-5, linear
warm-up then decay, dropout 0.1, gradient clipping at norm 2.0, no weight decay, one BM25 hard
negative per question shared across the batch, sequence length 256). DPR's batch (128 on 8
GPUs) and 40 epochs are out of reach here; the batch size and epochs are set per run."""

from __future__ import annotations

import re
from dataclasses import dataclass

from dpr_components.encoder_training.batching import NEGATIVE_SOURCES
from dpr_components.encoder_training.losses import LOSSES
from dpr_components.encoder_training.losses.similarity import SIMILARITIES
from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.runs import settings as shared
from dpr_components.runs.settings import TrainingSettings
from dpr_components.utils.similarity import canonical_similarity

# Settings that may change when a run is resumed (they do not change what is computed).
RESUMABLE_CHANGES = shared.RESUMABLE_CHANGES | {"threads", "keep_checkpoints", "fp16_export"}
_METRIC = re.compile(r"^(avg_rank|mrr|top\d+)$")


@dataclass(kw_only=True)
class EncoderTrainingSettings(TrainingSettings):
    """Settings of one run (the shared ones are :class:`~dpr_components.runs.settings.TrainingSettings`').
    Less obvious ones:

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
    # Passages per forward pass, shortest first, in one graph (None: the batch's passages in one pass).
    # The same gradient with less padding; about 1.7x faster on CPU (docs/training/speed_chunks/speed.md).
    encode_chunk: int | None = 16
    accumulation_steps: int = 1  # averages smaller batches' gradients: adds no in-batch negatives
    # optimisation
    epochs: int = 3
    learning_rate: float = 2e-5
    weight_decay: float = 0.0
    adam_eps: float = 1e-8
    warmup_steps: int | None = None
    seed: int = 12345
    threads: int | None = None
    # checkpoints, logs, validation
    keep_checkpoints: int = 2
    validate_every: int | None = None
    validate_at_start: bool = True
    val_questions: int = 300
    val_hard_negatives: int = 5
    val_pool_size: int = 3000
    selection_metric: str = "mrr"
    patience: int | None = None
    fp16_export: bool = False

    def validate(self) -> None:
        super().validate()
        self.check_ints("accumulation_steps", "keep_checkpoints", "val_questions")
        self.check_ints("validate_every", "grad_cache_chunk", "encode_chunk", "patience", "threads", optional=True)
        self.check_ints("warmup_steps", smallest=0, optional=True)
        self.check_ints("negatives", "val_hard_negatives", "val_pool_size", smallest=0)
        self.check_choice("loss", LOSSES)
        self.check_choice("similarity", SIMILARITIES)
        self.check_choice("negative_source", NEGATIVE_SOURCES)
        self.check_choice("pooling", ("auto", "cls", "mean", "pooler"))
        self.check_fraction("dropout")
        self.check_positive("adam_eps", "scale", "margin")
        if not _METRIC.match(self.selection_metric):
            self.refuse("selection_metric", "'avg_rank', 'mrr' or 'top<k>'")
        self._check_combinations()

    def _check_combinations(self) -> None:
        """Settings that are valid alone but not together."""
        if not self.in_batch and self.negatives == 0:
            raise ValueError("training without in-batch negatives (1-of-N) needs negatives >= 1")
        if not self.train_passage_encoder:
            if self.tie_encoders:
                raise ValueError("train_passage_encoder: false needs two encoders; tie_encoders shares one")
            if self.grad_cache_chunk:
                raise ValueError("train_passage_encoder: false encodes only questions; grad_cache_chunk is not needed")
        if self.tie_encoders and self.passage_model:
            raise ValueError("tie_encoders uses one encoder: do not set passage_model")

    @property
    def normalize(self) -> bool:
        """Cosine training yields unit vectors, so the exported encoders normalise; dot and L2 do not."""
        return canonical_similarity(self.similarity) == "cosine"
