"""A question or passage encoder as a sentence-transformers folder.

The folder (``modules.json``: Transformer, Pooling, and Normalize when the encoder normalises;
``sentence_bert_config.json`` with its ``max_seq_length``) loads as is in
``SentenceTransformer(folder)`` and so in Haystack's ``SentenceTransformersTextEmbedder`` and
``SentenceTransformersDocumentEmbedder``, and gives the vectors :class:`TextEncoder` gives for the
same text: same weights (a DPR encoder's BERT saved as a plain ``BertModel``, float32), same
pooling (DPR's pooler output without projection is the [CLS] vector), same normalisation, same
token limit. Passages with titles are the exception: our encoders read DPR's
``[CLS] title [SEP] text [SEP]`` pair, which a sentence-transformers embedder cannot form
(docs/interop.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from dpr_components.encoders.bundled import BUNDLED_PREFIX
from dpr_components.encoders.model_files import (
    LOAD_ERRORS,
    ModelFileError,
    bert_config_settings,
    check_finite_to_save,
    check_finite_weights,
    check_model_files,
    describe_load_error,
    quiet_transformers,
)
from dpr_components.encoders.model_layout import ModelLayout, check_max_length, detect_layout, resolve_model_path
from dpr_components.encoders.pairing import (
    PAIR_FILE,
    PASSAGE_DIR,
    QUESTION_DIR,
    Role,
    encoder_models,
    encoder_role,
    read_pair_file,
)
from dpr_components.encoders.text_encoder import DEFAULT_MAX_LENGTH
from dpr_components.encoders.transformers_loading import load_tokenizer
from dpr_components.utils.atomic_files import atomic_directory
from dpr_components.utils.output_folders import SENTENCE_TRANSFORMERS, check_output_folder, write_marker

_ST_PREFIX = "sentence_transformers.models."


class ExportError(ModelFileError):
    """A model cannot be written in the requested format (the message says why)."""


def encoder_for_role(model: str, role: Role) -> str:
    """The encoder of ``role`` that ``model`` names: a pair's folder (``question_encoder/`` and
    ``passage_encoder/``, or a question encoder whose ``encoder_pair.json`` names its passage model),
    or a single encoder serving both sides."""
    if role not in ("question", "passage"):
        raise ExportError(f"role must be 'question' or 'passage', got {role!r}")
    path = Path(model)
    if not model.startswith(BUNDLED_PREFIX) and not (path / "config.json").is_file() and (path / QUESTION_DIR).is_dir():
        if role == "question":
            return str(path / QUESTION_DIR)
        if (path / PASSAGE_DIR).is_dir():
            return str(path / PASSAGE_DIR)
        model = str(path / QUESTION_DIR)  # its pair file names the passage encoder
    question, passage = encoder_models(model)
    if role == "question":
        if encoder_role(question) == "passage":
            raise ExportError(f"{question!r} is a passage encoder; export it with role 'passage'")
        return question
    if passage == question and encoder_role(question) == "question":
        raise ExportError(
            f"{question!r} is a question encoder and its folder does not say which passage encoder goes with it"
        )
    return passage


def export_settings(layout: ModelLayout, dpr_projection: int = 0) -> tuple[str, bool, int]:
    """(sentence-transformers pooling mode, normalise, max_seq_length) giving :class:`TextEncoder`'s
    vectors for a folder of ``layout`` used with its own settings (the embedders' defaults)."""
    pooling = layout.pooling
    if pooling == "pooler":
        if layout.kind not in ("dpr_question", "dpr_context"):
            raise ExportError(
                f"{layout.transformer_path} pools with BERT's pooler (dense + tanh), which a sentence-transformers "
                "Pooling module cannot express; give the folder 'cls' or 'mean' pooling"
            )
        if dpr_projection:
            raise ExportError(
                f"{layout.transformer_path} projects its vectors to {dpr_projection} dimensions "
                "(projection_dim), which the export does not carry over"
            )
        pooling = "cls"  # DPR's pooler output without projection is the [CLS] vector
    positions = layout.max_positions or DEFAULT_MAX_LENGTH
    max_length = layout.max_length or min(DEFAULT_MAX_LENGTH, positions)
    check_max_length(max_length, layout.max_positions)
    return pooling, layout.normalize, max_length


def load_transformer(layout: ModelLayout) -> Any:
    """The transformer of ``layout`` in float32 (checked files, no missing weights, finite values)."""
    from transformers import AutoModel, DPRContextEncoder, DPRQuestionEncoder

    folder = layout.transformer_path
    check_model_files(folder)
    model_class = {"dpr_question": DPRQuestionEncoder, "dpr_context": DPRContextEncoder}.get(layout.kind, AutoModel)
    try:
        with quiet_transformers():
            loaded: Any = model_class.from_pretrained(
                str(folder), output_loading_info=True, dtype=torch.float32, trust_remote_code=False
            )
    except LOAD_ERRORS as error:
        raise ExportError(describe_load_error(folder, error)) from error
    model, info = loaded
    missing = [k for k in info.get("missing_keys", []) if "pooler." not in k and "position_ids" not in k]
    if missing:
        raise ExportError(f"{folder} lacks weights of its architecture (e.g. {sorted(missing)[:3]}): nothing to export")
    check_finite_weights(folder, model.state_dict())
    return model.float().eval()


def _as_plain_model(model: Any, layout: ModelLayout) -> Any:
    """The transformer to save: a DPR encoder's BERT as a plain ``BertModel``, any other model as is."""
    if layout.kind not in ("dpr_question", "dpr_context"):
        return model
    from transformers import BertConfig, BertModel

    inner: Any = model.question_encoder if layout.kind == "dpr_question" else model.ctx_encoder
    bert = inner.bert_model
    config = BertConfig(**bert_config_settings(bert.config))
    plain: Any = BertModel(config)
    result = plain.load_state_dict(bert.state_dict(), strict=False)
    with torch.no_grad():  # DPR has no BERT pooler and sentence-transformers never runs it: zeros, not noise
        plain.pooler.dense.weight.zero_()
        plain.pooler.dense.bias.zero_()
    missing = [k for k in result.missing_keys if "position_ids" not in k and not k.startswith("pooler.")]
    if missing or result.unexpected_keys:
        raise ExportError(f"the BERT of {layout.transformer_path} does not fit a BertModel (missing {missing[:3]})")
    return plain.eval()


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def export_sentence_transformers(
    model: str, out: str | Path, role: Role = "question", max_length: int | None = None, overwrite: bool = False
) -> Path:
    """Write the ``role`` encoder of ``model`` to the folder ``out`` as a sentence-transformers model;
    ``max_length`` overrides the encoder's token limit (to match an embedder given ``max_length``).
    ``out`` is replaced atomically when it is empty or an earlier export (``overwrite``: whatever it
    holds, but never the model itself; see :mod:`dpr_components.utils.output_folders`). Returns ``out``."""
    check_output_folder(out, SENTENCE_TRANSFORMERS, inputs=[model], overwrite=overwrite)
    source = encoder_for_role(model, role)
    folder = resolve_model_path(source)
    layout = detect_layout(folder)
    transformer = load_transformer(layout)
    pooling, normalize, limit = export_settings(layout, int(getattr(transformer.config, "projection_dim", 0) or 0))
    limit = check_max_length(max_length, layout.max_positions) or limit
    plain = _as_plain_model(transformer, layout)
    tokenizer = load_tokenizer(layout)
    dim = int(plain.config.hidden_size)
    check_finite_to_save(Path(out), plain.state_dict())
    with quiet_transformers(), atomic_directory(out) as tmp:
        plain.save_pretrained(str(tmp), safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
        modules = [
            {"idx": 0, "name": "0", "path": "", "type": _ST_PREFIX + "Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": _ST_PREFIX + "Pooling"},
        ]
        if normalize:
            modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": _ST_PREFIX + "Normalize"})
            (tmp / "2_Normalize").mkdir()
        _write_json(tmp / "modules.json", modules)
        _write_json(tmp / "sentence_bert_config.json", {"max_seq_length": limit, "do_lower_case": False})
        (tmp / "1_Pooling").mkdir()
        _write_json(
            tmp / "1_Pooling" / "config.json",
            {
                "word_embedding_dimension": dim,
                "pooling_mode_cls_token": pooling == "cls",
                "pooling_mode_mean_tokens": pooling == "mean",
                "pooling_mode_max_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": False,
            },
        )
        record = read_pair_file(folder) if role == "question" else None
        if record is not None:  # our own embedders keep checking the store's passage encoder
            _write_json(tmp / PAIR_FILE, record)
        write_marker(tmp, SENTENCE_TRANSFORMERS)
        for item in tmp.rglob("*"):
            item.chmod(0o755 if item.is_dir() else 0o644)
    return Path(out)
