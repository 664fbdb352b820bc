"""Move BERT weights between a plain ``BertModel`` and the Hugging Face DPR classes.

``DPRQuestionEncoder`` and ``DPRContextEncoder`` wrap a ``BertModel`` without its pooler under
``question_encoder.bert_model.`` / ``ctx_encoder.bert_model.``; with ``projection_dim`` 0 their
``pooler_output`` is the [CLS] vector of the last layer."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Literal, cast

import torch

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedModel

Role = Literal["question", "context"]
_PREFIX = {"question": "question_encoder.bert_model.", "context": "ctx_encoder.bert_model."}


def dpr_class(role: Role) -> type[PreTrainedModel]:
    from transformers import DPRContextEncoder, DPRQuestionEncoder

    if role not in _PREFIX:
        raise ValueError(f"role must be 'question' or 'context', got {role!r}")
    return DPRQuestionEncoder if role == "question" else DPRContextEncoder


def role_of(model: torch.nn.Module) -> Role:
    if hasattr(model, "question_encoder"):
        return "question"
    if hasattr(model, "ctx_encoder"):
        return "context"
    raise TypeError(f"{type(model).__name__} is neither a DPRQuestionEncoder nor a DPRContextEncoder")


def dpr_config_from(config: Any, **overrides: Any) -> Any:
    """A ``DPRConfig`` with the architecture fields of a BERT (or DPR) config."""
    from transformers import DPRConfig

    if config.model_type not in ("bert", "dpr"):
        raise ValueError(
            f"the Hugging Face DPR layout holds BERT encoders; this checkpoint is a {config.model_type!r} model "
            "(train it in plain layout instead)"
        )
    accepted = set(inspect.signature(DPRConfig.__init__).parameters)
    fields = {k: v for k, v in config.to_dict().items() if k in accepted and k not in ("architectures", "dtype")}
    fields.update(overrides)
    return DPRConfig(**fields)


def bert_config_from(config: Any) -> Any:
    from transformers import BertConfig

    accepted = set(inspect.signature(BertConfig.__init__).parameters)
    skip = ("architectures", "dtype", "projection_dim")
    return BertConfig(**{k: v for k, v in config.to_dict().items() if k in accepted and k not in skip})


def bert_to_dpr(bert: torch.nn.Module, role: Role, **config_overrides: Any) -> torch.nn.Module:
    """A DPR encoder of ``role`` holding ``bert``'s weights (its pooler is dropped)."""
    model = dpr_class(role)(dpr_config_from(bert.config, **config_overrides))
    state = {_PREFIX[role] + k: v for k, v in bert.state_dict().items() if not k.startswith("pooler.")}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise ValueError(f"BERT weights do not fit the DPR encoder: missing {missing[:3]}, unexpected {unexpected[:3]}")
    return model


def dpr_to_dpr(model: torch.nn.Module, role: Role) -> torch.nn.Module:
    """The same weights as a DPR encoder of ``role`` (question <-> context)."""
    source = role_of(model)
    if source == role:
        return model
    converted = dpr_class(role)(cast("PretrainedConfig", model.config))
    state = {_PREFIX[role] + k[len(_PREFIX[source]) :]: v for k, v in model.state_dict().items()}
    converted.load_state_dict(state)
    return converted


def dpr_to_bert(model: torch.nn.Module) -> PreTrainedModel:
    """The DPR encoder's BERT as a plain ``BertModel`` (without pooler: DPR has none)."""
    from transformers import BertModel

    if getattr(model.config, "projection_dim", 0):
        raise ValueError("this DPR encoder has a projection layer, which a plain BERT folder cannot hold")
    prefix = _PREFIX[role_of(model)]
    bert = BertModel(bert_config_from(model.config), add_pooling_layer=False)
    bert.load_state_dict({k[len(prefix) :]: v for k, v in model.state_dict().items() if k.startswith(prefix)})
    return bert
