"""Convert encoder folders between layouts, keeping pooling and normalisation:

* :func:`to_dpr`: a sentence-transformers, plain BERT or DPR folder (or ``bundled:...``) to the
  Hugging Face DPR layout (``question_encoder/`` + ``passage_encoder/`` with sidecars);
* :func:`to_sentence_transformers`: one encoder folder to a sentence-transformers folder
  (Transformer + Pooling [+ Normalize] modules);
* :func:`to_bert`: one encoder folder to a plain BERT folder with an ``encoder_config.json``
  sidecar recording pooling and normalisation;
* :func:`question_encoder_only`: a question-side run's E_Q alone, paired with the fixed E_P.

DPR's ``pooler`` output without a projection is the [CLS] vector, so it converts to ``cls``
pooling. Our passages are encoded as the pair (title, text); with sentence-transformers pass
``[title, text]`` pairs to ``encode`` to get the same input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from dpr_components.encoder_training.dpr_layout import Role, dpr_class, dpr_to_bert
from dpr_components.encoder_training.export import export_bi_encoder, save_encoder_folder, save_weights
from dpr_components.encoder_training.frozen_passages import check_same_vectors
from dpr_components.encoders.model_files import (
    LOAD_ERRORS,
    check_finite_weights,
    check_model_files,
    describe_load_error,
    quiet_transformers,
)
from dpr_components.encoders.model_layout import (
    SIDECAR_FILE,
    EncoderLoadError,
    ModelLayout,
    detect_layout,
    resolve_model_path,
)
from dpr_components.encoders.pairing import (
    PASSAGE_DIR,
    QUESTION_DIR,
    write_question_pair_file,
)
from dpr_components.encoders.transformers_loading import load_tokenizer

if TYPE_CHECKING:
    from transformers import PreTrainedModel
from dpr_components.encoder_training.model import BiEncoder
from dpr_components.utils.atomic_files import atomic_directory
from dpr_components.utils.output_folders import (
    ENCODER_PAIR,
    MODEL,
    SENTENCE_TRANSFORMERS,
    check_output_folder,
    write_marker,
)


def to_dpr(
    source: str, out: str | Path, passage_source: str | None = None, fp16: bool = False, overwrite: bool = False
) -> Path:
    """``source`` (and ``passage_source`` for E_P, else the same weights) in DPR layout at ``out``
    (see :func:`dpr_components.utils.output_folders.check_output_folder` for ``overwrite``)."""
    check_output_folder(out, ENCODER_PAIR, inputs=[source, passage_source or ""], overwrite=overwrite)
    model = BiEncoder.from_pretrained(source, passage_model=passage_source, tie=passage_source is None)
    return export_bi_encoder(model, out, fp16=fp16, metadata={"converted_from": _portable(source)})


def question_encoder_only(
    pair: str | Path, out: str | Path, paired_with: str, fp16: bool = False, overwrite: bool = False
) -> Path:
    """The question encoder of the trained pair folder ``pair`` alone at ``out``, recorded as the
    partner of ``paired_with`` — after checking that the pair's passage encoder makes the vectors
    ``paired_with`` makes (so a question-side run can ship E_Q alone and an index built with the
    fixed passage encoder serves it)."""
    pair = Path(pair)
    check_output_folder(out, MODEL, inputs=[pair, paired_with], overwrite=overwrite)
    question, passage = pair / QUESTION_DIR, pair / PASSAGE_DIR
    if not question.is_dir() or not passage.is_dir():
        raise FileNotFoundError(f"{pair} is not a trained pair (no {QUESTION_DIR}/ and {PASSAGE_DIR}/)")
    texts = [
        ("Photosynthesis", "Plants release oxygen during photosynthesis."),
        (None, "An untitled passage."),
        ("Hamlet", "Hamlet is a tragedy written by William Shakespeare around 1600."),
    ]
    check_same_vectors(str(passage), paired_with, texts)
    model = BiEncoder.from_pretrained(str(question), tie=True)
    out = Path(out)
    with atomic_directory(out) as tmp:
        save_encoder_folder(model.question_model, model.question_tokenizer, tmp, model.encoder_metadata(), fp16)
        write_question_pair_file(tmp, paired_with)
        write_marker(tmp, MODEL)
    return out


def _portable(reference: str) -> str:
    path = Path(reference)
    return path.name if path.is_absolute() else reference


def _bert_and_layout(source: str) -> tuple[PreTrainedModel, Any, ModelLayout, str]:
    """The plain BertModel inside ``source``, its tokenizer and layout, and the pooling to record."""
    from transformers import AutoModel

    layout = detect_layout(resolve_model_path(source))
    folder = layout.transformer_path
    check_model_files(folder)
    try:
        with quiet_transformers():
            if layout.kind in ("dpr_question", "dpr_context"):
                role: Role = "question" if layout.kind == "dpr_question" else "context"
                model = dpr_class(role).from_pretrained(str(folder), dtype=torch.float32, trust_remote_code=False)
                bert = dpr_to_bert(model)
            else:
                bert = AutoModel.from_pretrained(str(folder), dtype=torch.float32, trust_remote_code=False)
    except LOAD_ERRORS as error:
        raise EncoderLoadError(describe_load_error(folder, error)) from error
    check_finite_weights(folder, bert.state_dict())
    pooling: str
    if layout.kind in ("dpr_question", "dpr_context"):
        pooling = "cls" if layout.pooling == "pooler" else layout.pooling
    else:
        pooling = layout.pooling
        if pooling == "pooler":
            raise ValueError(f"{source}: BERT's pooler (dense + tanh) output has no equivalent outside its own layout")
    return bert, load_tokenizer(layout), layout, pooling


@contextmanager
def _bert_folder(
    source: str, out: Path, fp16: bool, kind: str, overwrite: bool
) -> Iterator[tuple[Path, PreTrainedModel, ModelLayout, str]]:
    """The folder being written at ``out`` (a folder of ``kind``), holding the weights and tokenizer of
    ``source``'s BERT, with the model, its layout and pooling; the caller adds its format's files
    before the folder takes ``out``."""
    check_output_folder(out, kind, inputs=[source], overwrite=overwrite)
    bert, tokenizer, layout, pooling = _bert_and_layout(source)
    with atomic_directory(out) as tmp:
        save_weights(bert, tmp, fp16)
        tokenizer.save_pretrained(str(tmp))
        write_marker(tmp, kind)
        yield tmp, bert, layout, pooling


def to_bert(source: str, out: str | Path, fp16: bool = False, overwrite: bool = False) -> Path:
    """One encoder as a plain BERT folder with a sidecar (loadable by ``TextEncoder``)."""
    out = Path(out)
    with _bert_folder(source, out, fp16, MODEL, overwrite) as (tmp, _, layout, pooling):
        sidecar = {
            "pooling": pooling,
            "normalize": layout.normalize,
            "max_length": layout.max_length,
            "title_mode": "pair",
        }
        (tmp / SIDECAR_FILE).write_text(json.dumps(sidecar, indent=2) + "\n", encoding="utf-8")
    return out


def to_sentence_transformers(source: str, out: str | Path, fp16: bool = False, overwrite: bool = False) -> Path:
    """One encoder as a sentence-transformers folder."""
    out = Path(out)
    with _bert_folder(source, out, fp16, SENTENCE_TRANSFORMERS, overwrite) as (tmp, bert, layout, pooling):
        (tmp / "1_Pooling").mkdir()
        pooling_config = {
            "word_embedding_dimension": bert.config.hidden_size,
            "pooling_mode_cls_token": pooling == "cls",
            "pooling_mode_mean_tokens": pooling == "mean",
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        }
        (tmp / "1_Pooling" / "config.json").write_text(json.dumps(pooling_config, indent=2), encoding="utf-8")
        modules = [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        ]
        if layout.normalize:
            (tmp / "2_Normalize").mkdir()
            modules.append(
                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
            )
        (tmp / "modules.json").write_text(json.dumps(modules, indent=2), encoding="utf-8")
        st_config = {"max_seq_length": layout.max_length or 256, "do_lower_case": False}
        (tmp / "sentence_bert_config.json").write_text(json.dumps(st_config, indent=2), encoding="utf-8")
    return out
