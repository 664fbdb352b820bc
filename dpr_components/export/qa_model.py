"""A ``DPRReader``'s span head as a standard ``BertForQuestionAnswering`` folder.

A ``DPRReader`` is a BERT with ``qa_outputs`` (Linear(hidden, 2): start and end logit per token,
exactly ``BertForQuestionAnswering``'s head) and ``qa_classifier`` (the passage-selection logit,
which a Hugging Face QA model has no place for and which is left out). The folder loads with
``AutoModelForQuestionAnswering`` and so in Haystack's ``TransformersExtractiveReader``.

Two changes keep the reader's own input format, so the exported model computes the logits ours
does: the tokenizer's pair template is set to DPR's untitled reader input
``[CLS] question [SEP] [SEP] passage`` (instead of BERT's ``[CLS] question [SEP] passage [SEP]``),
and segment embedding 1 is made equal to segment embedding 0 (the reader always ran with
segment ids 0; a tool passing segment ids 1 for the passage then changes nothing)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from dpr_components.encoders.model_files import bert_config_settings, check_finite_to_save, quiet_transformers
from dpr_components.export.sentence_transformers import ExportError
from dpr_components.readers.model import load_reader
from dpr_components.utils.atomic_files import atomic_directory
from dpr_components.utils.output_folders import QA_MODEL, check_output_folder, write_marker


def reader_bert_model(reader: Any, model_class: Any, head: str, **config: Any) -> Any:
    """A ``model_class`` (a Hugging Face BERT with a head, built with the head's ``config`` settings) holding
    the reader's BERT, segment embedding 1 made equal to 0 (the reader ran with segment ids 0 only), its head
    still untouched; ``head`` names the reader's head that the export keeps."""
    from transformers import BertConfig

    predictor: Any = reader.span_predictor
    if getattr(predictor.encoder, "projection_dim", 0):
        raise ExportError(f"the reader's encoder has a projection layer: its {head} head does not read BERT's output")
    bert = predictor.encoder.bert_model
    settings = bert_config_settings(bert.config)
    model = model_class(BertConfig(**{**settings, **config, "architectures": [model_class.__name__]}))
    result = model.bert.load_state_dict(bert.state_dict(), strict=False)
    missing = [k for k in result.missing_keys if "position_ids" not in k and not k.startswith("pooler.")]
    if missing or result.unexpected_keys:
        raise ExportError(f"the reader's BERT does not fit a BertModel (missing {missing[:3]})")
    with torch.no_grad():
        types = model.bert.embeddings.token_type_embeddings.weight
        types[1:] = types[0]
    return model


def qa_model_from_reader(reader: Any) -> Any:
    """A ``BertForQuestionAnswering`` holding the reader's BERT and span head (selection head dropped)."""
    from transformers import BertForQuestionAnswering

    model = reader_bert_model(reader, BertForQuestionAnswering, "span", num_labels=2)
    outputs = reader.span_predictor.qa_outputs
    if tuple(outputs.weight.shape) != (2, model.config.hidden_size):
        raise ExportError(f"the reader's span head has shape {tuple(outputs.weight.shape)}, not (2, hidden_size)")
    model.qa_outputs.load_state_dict(outputs.state_dict())
    return model.float().eval()


def reader_input_template(tokenizer: Any) -> None:
    """Make ``tokenizer``'s question-passage pairs DPR's reader rows: ``[CLS] q [SEP] [SEP] passage``,
    all segment ids 0 (passage tokens stay sequence 1, so tools still find the context)."""
    from tokenizers.processors import TemplateProcessing

    cls, sep = tokenizer.cls_token, tokenizer.sep_token
    tokenizer.backend_tokenizer.post_processor = TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0",
        pair=f"{cls}:0 $A:0 {sep}:0 {sep}:0 $B:0",
        special_tokens=[(cls, tokenizer.cls_token_id), (sep, tokenizer.sep_token_id)],
    )


def export_qa_model(model: str | Path, out: str | Path, overwrite: bool = False) -> Path:
    """Write the span head of the reader folder ``model`` to ``out`` as a ``BertForQuestionAnswering``
    checkpoint with its tokenizer; returns ``out``. ``out`` is replaced atomically when it is empty or
    an earlier export (``overwrite``: whatever it holds, but never the reader itself)."""
    check_output_folder(out, QA_MODEL, inputs=[model], overwrite=overwrite)
    reader, tokenizer = load_reader(str(model))
    qa = qa_model_from_reader(reader)
    if tokenizer.cls_token_id is None or tokenizer.sep_token_id is None:
        raise ExportError(f"the tokenizer of {model} has no [CLS] or [SEP] token")
    reader_input_template(tokenizer)
    save_model_folder(out, qa, tokenizer, QA_MODEL)
    return Path(out)


def save_model_folder(out: str | Path, model: Any, tokenizer: Any, kind: str) -> None:
    """Write ``model`` (finite weights checked) and ``tokenizer`` into the folder ``out`` atomically, marked
    as an export of ``kind``; the tokenizer keeps the pair template it was given, files readable by all."""
    check_finite_to_save(Path(out), model.state_dict())
    with quiet_transformers(), atomic_directory(out) as tmp:
        model.save_pretrained(str(tmp), safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
        # BERT's tokenizer class rebuilds BERT's own pair template on load; the generic class keeps ours.
        settings = json.loads((tmp / "tokenizer_config.json").read_text(encoding="utf-8"))
        settings["tokenizer_class"] = "PreTrainedTokenizerFast"
        (tmp / "tokenizer_config.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
        write_marker(tmp, kind)
        for item in tmp.rglob("*"):
            item.chmod(0o755 if item.is_dir() else 0o644)
