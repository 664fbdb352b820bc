"""What both embedders share: the encoder settings they take, the encoder built from them, its warm-up and from_dict."""

from __future__ import annotations

from typing import Any, Self

from haystack import default_from_dict
from haystack.utils import ComponentDevice

from dpr_components.encoders.encoder_settings import Backend, EncoderSettings, Pooling, Precision, TitleMode
from dpr_components.encoders.text_encoder import TextEncoder
from dpr_components.utils.devices import cpu_only_device

# The question encoder's settings a retriever takes and writes to its pipeline data.
QUERY_ENCODER_SETTINGS = "model pooling normalize max_length precision"
# The init parameters both embedders take.
ENCODER_SETTINGS = f"{QUERY_ENCODER_SETTINGS} batch_size"


class EncoderComponent:
    """Base of :class:`PassageEmbedder` and :class:`QuestionEmbedder`."""

    def _init_encoder(
        self,
        model: str,
        pooling: Pooling,
        normalize: bool | None,
        max_length: int | None,
        precision: Precision,
        batch_size: int,
        title_mode: TitleMode,
        plain_torch: bool = False,
        backend: Backend = "auto",
        device: ComponentDevice | None = None,
    ) -> None:
        """Keep the settings as init parameters and build the encoder (it checks them; weights load on warm-up)."""
        self.device = cpu_only_device(type(self).__name__, device)
        self.model, self.pooling, self.normalize = model, pooling, normalize
        self.max_length, self.precision, self.batch_size = max_length, precision, batch_size
        settings = EncoderSettings(
            model=model,
            pooling=pooling,
            normalize=normalize,
            max_length=max_length,
            title_mode=title_mode,
            precision=precision,
            backend=backend,
        )
        self.encoder = TextEncoder(settings, batch_size=batch_size, plain_torch=plain_torch)

    def warm_up(self) -> None:
        self.encoder.load()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild from ``to_dict`` output."""
        return default_from_dict(cls, data)
