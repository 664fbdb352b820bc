"""Which passage encoder made a store's vectors, and whether a question encoder matches it.

Questions must be encoded by the E_Q trained together with the E_P that indexed the passages;
with any other pair the search still returns passages, only bad ones. ``PassageEmbedder``
stamps each document with a digest of its encoder's weights (``meta["passage_encoder"]``) and
``DenseRetriever`` compares it with the passage encoder that goes with its question encoder:
the sibling ``passage_encoder/`` of a trained pair's ``question_encoder/``, or the model itself
when one encoder serves both sides (bundled MiniLM, sentence-transformers, BERT folders)."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from dpr_components.encoders import detect_layout, file_digest, resolve_model_path

META_FIELD = "passage_encoder"


@lru_cache(maxsize=32)
def _digest(weights: tuple[tuple[str, float, int], ...]) -> str:
    joined = "".join(file_digest(Path(name)) for name, _, _ in weights)
    return hashlib.sha256(joined.encode()).hexdigest()[:16]


def weights_digest(model: str) -> str | None:
    """A short digest of the weights of ``model`` (None when the folder holds no weight file)."""
    layout = detect_layout(resolve_model_path(model))
    files = sorted(layout.transformer_path.glob("*.safetensors")) or sorted(layout.transformer_path.glob("*.bin"))
    if not files:
        return None
    # Keyed by name, modification time and size, so a rewritten file is hashed again.
    return _digest(tuple((str(f), f.stat().st_mtime, f.stat().st_size) for f in files))


def paired_passage_model(question_model: str) -> str | None:
    """The passage encoder trained with ``question_model``; None when it cannot be known (a lone
    DPRQuestionEncoder folder)."""
    path = resolve_model_path(question_model)
    layout = detect_layout(path)
    if layout.kind == "dpr_question":
        sibling = path.parent / "passage_encoder"
        return str(sibling) if path.name == "question_encoder" and sibling.is_dir() else None
    if layout.kind == "dpr_context":
        return None
    return question_model


def check_pairing(question_model: str, expected: str | None, recorded: set[str]) -> None:
    """Raise when documents were embedded by another passage encoder than ``expected``."""
    if expected is None or not recorded or recorded == {expected}:
        return
    others = ", ".join(sorted(recorded - {expected}))
    raise ValueError(
        f"the store's passages were embedded by another passage encoder (weights {others}) than the one that "
        f"goes with question encoder {question_model!r} (weights {expected}): re-index the store with the "
        "matching passage encoder (e.g. pipelines/index.yml), or give DenseRetriever the question encoder "
        "trained with the store's passage encoder"
    )
