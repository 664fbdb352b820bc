"""The encoder engine behind the embedders, retrievers and trainers: model folders and their
checks (``model_files``), loading and encoding text (``text_encoder``, ``plain_bert`` for BERT
without transformers' model code), the E_Q/E_P pairing (``pairing``), one loaded copy per model
(``model_locks``), encoders built from component settings (``factory``) and passage encoding in
batches with a resumable cache (``batch_encoding``, ``embedding_cache``). The names below load on first use."""

from typing import TYPE_CHECKING

from dpr_components.utils.lazy_package import make_lazy

_import_structure = {
    "text_encoder": [
        "TextEncoder",
        "EncoderSettings",
        "EncoderLoadError",
        "BUNDLED_MINILM",
        "Pooling",
        "Precision",
        "TitleMode",
        "resolve_model_path",
        "load_tokenizer",
        "detect_layout",
    ],
}

if TYPE_CHECKING:
    from dpr_components.encoders.text_encoder import BUNDLED_MINILM as BUNDLED_MINILM
    from dpr_components.encoders.text_encoder import (
        EncoderLoadError as EncoderLoadError,
    )
    from dpr_components.encoders.text_encoder import EncoderSettings as EncoderSettings
    from dpr_components.encoders.text_encoder import Pooling as Pooling
    from dpr_components.encoders.text_encoder import Precision as Precision
    from dpr_components.encoders.text_encoder import TextEncoder as TextEncoder
    from dpr_components.encoders.text_encoder import TitleMode as TitleMode
    from dpr_components.encoders.text_encoder import detect_layout as detect_layout
    from dpr_components.encoders.text_encoder import load_tokenizer as load_tokenizer
    from dpr_components.encoders.text_encoder import (
        resolve_model_path as resolve_model_path,
    )
else:
    make_lazy(__name__, __file__, _import_structure)
