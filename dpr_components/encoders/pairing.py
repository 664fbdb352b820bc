"""Which passage encoder made a store's vectors, and whether a question encoder matches it.

Questions must be encoded by the E_Q trained together with the E_P that indexed the passages;
with any other pair the search still returns passages, only bad ones. ``PassageEmbedder``
stamps each document with a digest of its encoder's weights (``meta["passage_encoder"]``) and
``DenseRetriever`` compares the store's digest with the passage encoder that goes with its
question encoder. That partner is known from, in order:

1. the pair file ``encoder_pair.json`` written beside the weights when a pair is saved
   (role ``question`` or ``passage`` and the weights digest of the pair's passage encoder), so
   a question encoder copied out of its pair's folder still knows its partner — also when the
   partner lives elsewhere (``passage_model``, e.g. ``bundled:all-MiniLM-L6-v2`` for a question
   encoder trained against its fixed vectors);
2. the sibling ``passage_encoder/`` of a trained pair's ``question_encoder/``;
3. the model itself when one encoder serves both sides (bundled MiniLM, sentence-transformers,
   BERT folders).

A passage encoder (a ``DPRContextEncoder``, a ``passage_encoder/`` folder, or role ``passage``
in its pair file) is refused as a question encoder."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from dpr_components.encoders.bundled import (
    BUNDLED_PREFIX,
    PAIR_QUESTION_DIR,
    bundled_model_path,
    is_bundled,
    is_bundled_minilm,
)
from dpr_components.encoders.model_files import file_digest
from dpr_components.encoders.model_layout import EncoderLoadError, detect_layout, resolve_model_path
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.json_files import read_optional_json

META_FIELD = "passage_encoder"
PAIR_FILE = "encoder_pair.json"
QUESTION_DIR = PAIR_QUESTION_DIR
PASSAGE_DIR = "passage_encoder"

Role = Literal["question", "passage"]


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


def write_pair_files(question_dir: str | Path, passage_dir: str | Path) -> str:
    """Record in both encoder folders their role and the weights digest of the pair's passage
    encoder; return that digest."""
    digest = weights_digest(str(passage_dir))
    if digest is None:
        raise EncoderLoadError(f"{passage_dir} holds no weight file: cannot record the encoder pair")
    for folder, role in ((question_dir, "question"), (passage_dir, "passage")):
        record = {"role": role, "passage_encoder": digest}
        atomic_write_text(Path(folder) / PAIR_FILE, json.dumps(record, indent=2) + "\n")
    return digest


def write_question_pair_file(question_dir: str | Path, passage_model: str) -> str:
    """Record in a question encoder folder alone that it goes with ``passage_model`` (a folder or a
    ``bundled:...`` name that is not part of the pair's folder: the fixed passage encoder of a
    question-side run); return that encoder's weights digest."""
    digest = weights_digest(passage_model)
    if digest is None:
        raise EncoderLoadError(f"{passage_model} holds no weight file: cannot record the encoder pair")
    record = {"role": "question", "passage_encoder": digest, "passage_model": passage_model}
    atomic_write_text(Path(question_dir) / PAIR_FILE, json.dumps(record, indent=2) + "\n")
    return digest


def encoder_models(model: str) -> tuple[str, str]:
    """(question encoder, passage encoder) that ``model`` names: a trained pair's folder
    (``question_encoder/`` + ``passage_encoder/``), a pair's question encoder (its sibling, also of a
    bundled pair), a question encoder whose pair file names its passage encoder (``passage_model``),
    else ``model`` for both sides."""
    model = bundled_pair_question(model)
    folder = bundled_model_path(model) if is_bundled(model) and not is_bundled_minilm(model) else Path(model)
    if (folder / QUESTION_DIR).is_dir() and (folder / PASSAGE_DIR).is_dir():
        return str(folder / QUESTION_DIR), str(folder / PASSAGE_DIR)
    partner = passage_model_reference(model) if folder.is_dir() else None
    return model, partner or model


def bundled_pair_question(model: str) -> str:
    """``bundled:NAME/question_encoder`` for the bundled pair ``bundled:NAME``, else ``model`` unchanged."""
    if not is_bundled(model) or is_bundled_minilm(model):
        return model
    folder = bundled_model_path(model)
    if not (folder / "config.json").is_file() and (folder / QUESTION_DIR).is_dir():
        return f"{model.rstrip('/')}/{QUESTION_DIR}"
    return model


def read_pair_file(folder: Path) -> dict[str, Any] | None:
    """The pair record of an encoder folder (None when it has none)."""
    path = Path(folder) / PAIR_FILE
    record = read_optional_json(path, lambda error: EncoderLoadError(f"cannot read {path}: {error}"))
    if record is None:
        return None
    if (
        not isinstance(record, dict)
        or record.get("role") not in ("question", "passage")
        or not isinstance(record.get("passage_encoder"), str)
    ):
        raise EncoderLoadError(
            f'{path} is malformed: expected {{"role": "question" or "passage", "passage_encoder": "<digest>"}}'
        )
    return record


def encoder_role(model: str) -> Role | None:
    """``question`` or ``passage`` when the folder says which side of a pair it is, else None."""
    path = resolve_model_path(model)
    record = read_pair_file(path)
    if record is not None:
        return record["role"]
    kind = detect_layout(path).kind
    if kind == "dpr_context" or path.name == PASSAGE_DIR:
        return "passage"
    if kind == "dpr_question":
        return "question"
    return None


def paired_passage_model(question_model: str) -> str | None:
    """The passage encoder folder that goes with ``question_model``; None when it cannot be known
    from the folders alone (a lone DPRQuestionEncoder folder, or a passage encoder)."""
    path = resolve_model_path(question_model)
    layout = detect_layout(path)
    if layout.kind == "dpr_question":
        sibling = path.parent / PASSAGE_DIR
        return str(sibling) if path.name == QUESTION_DIR and sibling.is_dir() else None
    if layout.kind == "dpr_context":
        return None
    return question_model


def expected_passage_digest(question_model: str) -> str | None:
    """Weights digest of the passage encoder that goes with ``question_model`` (None: unknown).

    Raises when ``question_model`` is itself a passage encoder."""
    if encoder_role(question_model) == "passage":
        raise ValueError(
            f"{question_model!r} is a passage encoder (E_P), not a question encoder: questions must be encoded by "
            f"the question encoder trained with it (the sibling {QUESTION_DIR}/ folder of a trained pair)"
        )
    record = read_pair_file(resolve_model_path(question_model))
    if record is not None:
        return record["passage_encoder"]
    passage_model = paired_passage_model(question_model)
    return weights_digest(passage_model) if passage_model else None


def check_pairing(question_model: str, expected: str | None, recorded: set[str]) -> None:
    """Raise when documents were embedded by another passage encoder than ``expected``."""
    if expected is None or not recorded or recorded == {expected}:
        return
    others = ", ".join(sorted(recorded - {expected}))
    partner = passage_model_reference(question_model)
    how = f"--set embedder.model={partner}" if partner else "the matching passage encoder"
    raise ValueError(
        f"the store's passages were embedded by another passage encoder (weights {others}) than the one that "
        f"goes with question encoder {question_model!r} (weights {expected}): re-index the store "
        f"(haystack run index --input path=CORPUS --store STORE {how}), or give DenseRetriever the question "
        "encoder trained with the store's passage encoder"
    )


def passage_model_reference(question_model: str) -> str | None:
    """The passage encoder to index with for ``question_model``, named as a pipeline would name it
    (``bundled:NAME/passage_encoder`` for a bundled pair); None when the folders do not say."""
    question_model = bundled_pair_question(question_model)
    if is_bundled(question_model) and not is_bundled_minilm(question_model):
        head, _, rest = question_model[len(BUNDLED_PREFIX) :].partition("/")
        if rest.rstrip("/") == QUESTION_DIR and (bundled_model_path(BUNDLED_PREFIX + head) / PASSAGE_DIR).is_dir():
            return f"{BUNDLED_PREFIX}{head}/{PASSAGE_DIR}"
    record = read_pair_file(resolve_model_path(question_model))
    if record is not None and isinstance(record.get("passage_model"), str):
        return record["passage_model"]
    return paired_passage_model(question_model)
