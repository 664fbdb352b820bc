"""The settings of a text encoder: everything that changes the vectors it produces, and their values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dpr_components.encoders.bundled import BUNDLED_MINILM

Pooling = Literal["auto", "cls", "mean", "pooler"]
Precision = Literal["auto", "fp32", "bf16"]
Backend = Literal["auto", "torch", "openvino"]
TitleMode = Literal["pair", "prefix", "none"]


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
