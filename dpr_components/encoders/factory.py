"""The ``TextEncoder`` an embedder holds, built from the embedder's parameters."""

from __future__ import annotations

from dpr_components.encoders.encoder_settings import Backend, EncoderSettings, Pooling, Precision, TitleMode
from dpr_components.encoders.text_encoder import TextEncoder


def make_encoder(
    model: str,
    pooling: Pooling,
    normalize: bool | None,
    max_length: int | None,
    title_mode: TitleMode,
    precision: Precision,
    batch_size: int,
    plain_torch: bool = False,
    backend: Backend = "torch",
) -> TextEncoder:
    """An encoder of ``model`` with these settings (weights load on first use); ``plain_torch`` for
    query-time encoders (see :class:`TextEncoder`); ``backend`` runs the model (torch or OpenVINO)."""
    settings = EncoderSettings(
        model=model,
        pooling=pooling,
        normalize=normalize,
        max_length=max_length,
        title_mode=title_mode,
        precision=precision,
        backend=backend,
    )
    return TextEncoder(settings, batch_size=batch_size, plain_torch=plain_torch)
