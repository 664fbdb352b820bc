"""A ``PassageRanker``'s model (a ``DPRReader``'s passage-selection head) as a cross-encoder folder.

The ranker scores a passage by ``qa_classifier`` (Linear(hidden, 1)) on the last layer's [CLS]
vector. A ``BertForSequenceClassification`` (what sentence-transformers' ``CrossEncoder`` and so
Haystack's ``SentenceTransformersSimilarityRanker`` load) reads [CLS] through BERT's pooler first,
``tanh(dense(h))``, then its ``classifier``. The export maps the selection head onto both, in one
coordinate: the pooler's first row is ε times the head's weights (its bias ε times the head's bias),
every other row zero, and the classifier reads that coordinate times 1/ε. Its score is then

    score = tanh(ε · logit) / ε,   ε = :data:`SCALE`,   so   logit = atanh(ε · score) / ε,

a strictly increasing function of the ranker's logit (the same order of passages; within 0.1% of
the logit while |logit| < 50). The span head, which a cross-encoder has no place for, is left out.

The input is the ranker's: the tokenizer's pair template is ``[CLS] question [SEP] passage``, all
segment ids 0 (segment embedding 1 made equal to 0), and a document's title goes in front of its
text with the separator ``" [SEP] "``, giving the ranker's ``[CLS] question [SEP] title [SEP]
passage`` (docs/interop.md: ``meta_fields_to_embed=["title"], embedding_separator=" [SEP] "``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from dpr_components.export.qa_model import reader_bert_model, save_model_folder
from dpr_components.export.sentence_transformers import ExportError
from dpr_components.readers.model import load_reader
from dpr_components.utils.output_folders import check_output_folder

CROSS_ENCODER = "cross-encoder model"
SCALE = 1e-3
"""ε of the mapping: small enough for tanh to stay nearly linear over any logit a ranker gives, large
enough for float32 to keep the logit's digits."""
TITLE_SEPARATOR = " [SEP] "
DEFAULT_MAX_LENGTH = 256  # PassageRanker's max_length


def logit_from_score(score: float) -> float:
    """The ranker's selection logit back from the exported model's raw score (no sigmoid applied)."""
    return math.atanh(SCALE * score) / SCALE


def cross_encoder_from_reader(reader: Any) -> Any:
    """The reader's BERT and selection head as a one-label ``BertForSequenceClassification`` whose score is
    ``tanh(SCALE · logit) / SCALE`` of the reader's selection logit (module docstring)."""
    from transformers import BertForSequenceClassification

    model = reader_bert_model(reader, BertForSequenceClassification, "selection", num_labels=1, problem_type=None)
    head = reader.span_predictor.qa_classifier
    hidden = model.config.hidden_size
    if tuple(head.weight.shape) != (1, hidden):
        raise ExportError(f"the reader's selection head has shape {tuple(head.weight.shape)}, not (1, hidden_size)")
    with torch.no_grad():
        pooler, classifier = model.bert.pooler.dense, model.classifier
        pooler.weight.zero_()
        pooler.bias.zero_()
        pooler.weight[0] = SCALE * head.weight[0].float()
        pooler.bias[0] = SCALE * head.bias[0].float()
        classifier.weight.zero_()
        classifier.weight[0, 0] = 1.0 / SCALE
        classifier.bias.zero_()
    return model.float().eval()


def ranker_input_template(tokenizer: Any) -> None:
    """Make ``tokenizer``'s question-passage pairs the ranker's rows: ``[CLS] q [SEP] passage``, all segment
    ids 0 (a titled document's text, ``title [SEP] passage``, then gives ``[CLS] q [SEP] title [SEP] passage``)."""
    from tokenizers.processors import TemplateProcessing

    cls, sep = tokenizer.cls_token, tokenizer.sep_token
    tokenizer.backend_tokenizer.post_processor = TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0",
        pair=f"{cls}:0 $A:0 {sep}:0 $B:0",
        special_tokens=[(cls, tokenizer.cls_token_id), (sep, tokenizer.sep_token_id)],
    )


def export_cross_encoder(
    model: str | Path, out: str | Path, max_length: int = DEFAULT_MAX_LENGTH, overwrite: bool = False
) -> Path:
    """Write the selection head of the reader folder ``model`` (a ``PassageRanker``'s model) to ``out`` as a
    one-label ``BertForSequenceClassification`` with its tokenizer, inputs cut to ``max_length`` tokens;
    returns ``out``. ``out`` is replaced atomically when it is empty or an earlier export (``overwrite``:
    whatever it holds, but never the reader itself)."""
    check_output_folder(out, CROSS_ENCODER, inputs=[model], overwrite=overwrite)
    reader, tokenizer = load_reader(str(model))
    positions = int(getattr(reader.config, "max_position_embeddings", max_length))
    if isinstance(max_length, bool) or not isinstance(max_length, int) or not 8 <= max_length <= positions:
        raise ExportError(f"max_length must be a whole number from 8 to the reader's {positions} positions")
    if tokenizer.cls_token_id is None or tokenizer.sep_token_id is None:
        raise ExportError(f"the tokenizer of {model} has no [CLS] or [SEP] token")
    cross_encoder = cross_encoder_from_reader(reader)
    ranker_input_template(tokenizer)
    tokenizer.model_max_length = max_length
    save_model_folder(out, cross_encoder, tokenizer, CROSS_ENCODER)
    return Path(out)
