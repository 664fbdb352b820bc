"""BERT encoders run in plain torch and tokenised with the ``tokenizers`` library, without
importing transformers.

Why our own small piece: importing transformers' model code (``modeling_utils`` pulls in
``torch._dynamo`` and ``torch.distributed.tensor``) made ``haystack run pipelines/search.yml -q ...``
take about twice the CPU time and wall time to answer one question (about 5.4 s instead of 2.7 s;
docs/benchmarks/cli/first_answer.md, ``python -m benchmarks.cli.first_answer``). Encoding a question needs
only BERT's forward pass, which is about forty lines of torch.

Only what is proven equal to transformers' ``BertModel`` (eval mode, ``sdpa`` attention, float32
weights, cast to bf16 when asked) is supported: ``model_type`` ``bert`` or a DPR question/context
encoder, absolute positions, exact ``gelu``, no decoder or cross-attention, one
``model.safetensors`` with transformers' weight names, and a ``BertTokenizer`` whose
``tokenizer.json`` holds only the named special tokens. The same torch operations run in the same
order, so vectors equal transformers' (tests/encoders/test_bert_inference.py). For anything else the
loaders return ``None`` and the caller uses transformers; weights holding NaN or infinity are an
error (:func:`dpr_components.encoders.model_files.check_finite_weights`), whichever path would load them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from haystack import logging

from dpr_components.encoders.model_files import check_finite_weights

logger = logging.getLogger(__name__)

WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
# Tokenizer classes that transformers builds as its WordPiece ``BertTokenizer``.
BERT_TOKENIZER_CLASSES = {
    f"{name}{suffix}"
    for name in ("BertTokenizer", "DPRQuestionEncoderTokenizer", "DPRContextEncoderTokenizer")
    for suffix in ("", "Fast")
}
_DPR_PREFIX = {
    "dpr_question": "question_encoder.bert_model.",
    "dpr_context": "ctx_encoder.bert_model.",
    "dpr_reader": "span_predictor.encoder.bert_model.",
}
# The DPR kinds whose first-token vector goes through ``encode_proj`` (a reader's spans read every token).
_PROJECTED = ("dpr_question", "dpr_context")


class Unsupported(Exception):
    """The checkpoint has something this module does not reproduce exactly; use transformers."""


@dataclass(frozen=True)
class BertShape:
    """The configuration values the forward pass uses (``projection_dim`` 0: no DPR projection)."""

    hidden_size: int
    intermediate_size: int
    vocab_size: int
    type_vocab_size: int
    num_layers: int
    num_heads: int
    layer_norm_eps: float
    max_positions: int
    projection_dim: int
    has_pooler: bool


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise Unsupported(f"cannot read {path.name}: {error}") from error
    if not isinstance(data, dict):
        raise Unsupported(f"{path.name} is not a JSON object")
    return data


def _check_config(config: dict[str, Any], kind: str) -> BertShape:
    """The shape of a supported configuration; :class:`Unsupported` names the first difference."""
    model_type = config.get("model_type")
    if not (model_type == "bert" or (model_type == "dpr" and kind in _DPR_PREFIX)):
        raise Unsupported(f"model_type {model_type!r}")
    checks = {
        "hidden_act": (config.get("hidden_act", "gelu"), "gelu"),
        "position_embedding_type": (config.get("position_embedding_type", "absolute"), "absolute"),
        "is_decoder": (config.get("is_decoder", False), False),
        "add_cross_attention": (config.get("add_cross_attention", False), False),
        "chunk_size_feed_forward": (config.get("chunk_size_feed_forward", 0), 0),
        "pruned_heads": (bool(config.get("pruned_heads")), False),
        "attn_implementation": (
            config.get("attn_implementation") or config.get("_attn_implementation") or "sdpa",
            "sdpa",
        ),
    }
    for name, (value, wanted) in checks.items():
        if value != wanted:
            raise Unsupported(f"{name} is {value!r}, not {wanted!r}")
    try:
        hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
        shape = BertShape(
            hidden_size=hidden,
            intermediate_size=int(config["intermediate_size"]),
            vocab_size=int(config["vocab_size"]),
            type_vocab_size=int(config.get("type_vocab_size", 2)),
            num_layers=int(config["num_hidden_layers"]),
            num_heads=heads,
            layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
            max_positions=int(config.get("max_position_embeddings", 512)),
            projection_dim=int(config.get("projection_dim", 0) or 0) if kind in _PROJECTED else 0,
            has_pooler=False,
        )
    except (KeyError, TypeError, ValueError) as error:
        raise Unsupported(f"configuration value missing or invalid: {error}") from error
    if heads <= 0 or hidden % heads:
        raise Unsupported(f"hidden_size {hidden} is not a multiple of num_attention_heads {heads}")
    if shape.num_layers < 1:
        raise Unsupported("no layers")
    return shape


def _expected_shapes(shape: BertShape) -> dict[str, tuple[int, ...]]:
    """Name and shape of every weight the forward pass reads (the pooler and projection apart)."""
    h, i = shape.hidden_size, shape.intermediate_size
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings.word_embeddings.weight": (shape.vocab_size, h),
        "embeddings.position_embeddings.weight": (shape.max_positions, h),
        "embeddings.token_type_embeddings.weight": (shape.type_vocab_size, h),
        "embeddings.LayerNorm.weight": (h,),
        "embeddings.LayerNorm.bias": (h,),
    }
    linear = {
        "attention.self.query": (h, h),
        "attention.self.key": (h, h),
        "attention.self.value": (h, h),
        "attention.output.dense": (h, h),
        "intermediate.dense": (i, h),
        "output.dense": (h, i),
    }
    for layer in range(shape.num_layers):
        for name, (rows, columns) in linear.items():
            shapes[f"encoder.layer.{layer}.{name}.weight"] = (rows, columns)
            shapes[f"encoder.layer.{layer}.{name}.bias"] = (rows,)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[f"encoder.layer.{layer}.{norm}.weight"] = (h,)
            shapes[f"encoder.layer.{layer}.{norm}.bias"] = (h,)
    if shape.projection_dim > 0:
        shapes["encode_proj.weight"] = (shape.projection_dim, h)
        shapes["encode_proj.bias"] = (shape.projection_dim,)
    return shapes


class PlainBert:
    """BERT's encoder forward pass over a dict of tensors, operation for operation as transformers'
    ``BertModel`` with ``sdpa`` attention in eval mode (dropout is the identity there)."""

    def __init__(self, shape: BertShape, weights: dict[str, torch.Tensor], is_dpr: bool) -> None:
        self.config = shape
        self.is_dpr = is_dpr
        self._w = weights
        self._head_size = shape.hidden_size // shape.num_heads
        self._scaling = self._head_size**-0.5

    @property
    def weights(self) -> dict[str, torch.Tensor]:
        """Every weight the forward pass reads, by its name in a ``BertModel`` (a copy of the mapping)."""
        return dict(self._w)

    def _linear(self, name: str, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self._w[f"{name}.weight"], self._w[f"{name}.bias"])

    def _layer_norm(self, name: str, x: torch.Tensor) -> torch.Tensor:
        size = (self.config.hidden_size,)
        return F.layer_norm(x, size, self._w[f"{name}.weight"], self._w[f"{name}.bias"], self.config.layer_norm_eps)

    def _attention(self, prefix: str, hidden: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        input_shape = hidden.shape[:-1]
        split = (*input_shape, -1, self._head_size)
        query = self._linear(f"{prefix}.query", hidden).view(*split).transpose(1, 2)
        key = self._linear(f"{prefix}.key", hidden).view(*split).transpose(1, 2)
        value = self._linear(f"{prefix}.value", hidden).view(*split).transpose(1, 2)
        out = F.scaled_dot_product_attention(
            query, key, value, attn_mask=mask, dropout_p=0.0, scale=self._scaling, is_causal=False
        )
        out = out.reshape(out.shape[0], -1, query.shape[2], value.shape[-1]).transpose(1, 2).contiguous()
        return out.reshape(*input_shape, -1).contiguous()

    def last_hidden_state(self, batch: dict[str, torch.Tensor], layers: int | None = None) -> torch.Tensor:
        """The encoder's output for ``input_ids`` / ``attention_mask`` / ``token_type_ids`` (``layers``:
        the output of the first ``layers`` layers instead of all)."""
        input_ids = batch["input_ids"]
        batch_size, length = input_ids.shape
        if length > self.config.max_positions:
            raise ValueError(f"{length} tokens exceed the model's {self.config.max_positions} positions")
        types = batch.get("token_type_ids")
        if types is None:
            types = torch.zeros_like(input_ids)
        w = self._w
        hidden = F.embedding(input_ids, w["embeddings.word_embeddings.weight"])
        hidden = hidden + F.embedding(types, w["embeddings.token_type_embeddings.weight"])
        positions = torch.arange(length).unsqueeze(0)
        hidden = hidden + F.embedding(positions, w["embeddings.position_embeddings.weight"])
        hidden = self._layer_norm("embeddings.LayerNorm", hidden)
        padding = batch.get("attention_mask")
        # As transformers: no mask when nothing is padded, else a boolean (batch, 1, query, key) mask.
        mask = None
        if padding is not None and not bool(padding.all()):
            mask = padding.bool()[:, None, None, :].expand(batch_size, 1, length, length)
        for i in range(self.config.num_layers if layers is None else layers):
            layer = f"encoder.layer.{i}"
            hidden = self._feed_forward(layer, self._attention(f"{layer}.attention.self", hidden, mask), hidden)
        return hidden

    def _feed_forward(self, layer: str, attended: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """The rest of a layer after self-attention: output projection, norms and the feed-forward block."""
        attended = self._layer_norm(
            f"{layer}.attention.output.LayerNorm",
            self._linear(f"{layer}.attention.output.dense", attended) + hidden,
        )
        inner = F.gelu(self._linear(f"{layer}.intermediate.dense", attended))
        return self._layer_norm(f"{layer}.output.LayerNorm", self._linear(f"{layer}.output.dense", inner) + attended)

    def first_token_of_last_layer(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The last layer's output at position 0 alone (rows × hidden) from the layer below's ``hidden``,
        attending to every unpadded token: what a head reading [CLS] alone needs."""
        layer = f"encoder.layer.{self.config.num_layers - 1}"
        prefix = f"{layer}.attention.self"
        rows, tokens, _ = hidden.shape
        first = hidden[:, :1]
        query = self._linear(f"{prefix}.query", first).view(rows, 1, -1, self._head_size).transpose(1, 2)
        key = self._linear(f"{prefix}.key", hidden).view(rows, tokens, -1, self._head_size).transpose(1, 2)
        value = self._linear(f"{prefix}.value", hidden).view(rows, tokens, -1, self._head_size).transpose(1, 2)
        context = F.scaled_dot_product_attention(
            query, key, value, attn_mask=attention_mask[:, None, None, :].bool(), scale=self._scaling
        )
        return self._feed_forward(layer, context.transpose(1, 2).reshape(rows, 1, -1), first)[:, 0]

    def pooler_output(self, hidden: torch.Tensor) -> torch.Tensor:
        """DPR: the [CLS] state (projected when the encoder has a projection); BERT: dense + tanh of [CLS]."""
        first = hidden[:, 0, :]
        if self.is_dpr:
            return self._linear("encode_proj", first) if self.config.projection_dim > 0 else first
        if not self.config.has_pooler:
            raise Unsupported("this model has no pooler weights")
        return torch.tanh(self._linear("pooler.dense", first))


def _as_loaded(tensor: torch.Tensor, bf16: bool) -> torch.Tensor:
    """The value transformers ends with: a float32 model (whatever the file's dtype), cast to bf16
    by TextEncoder when ``bf16``. From float16, bfloat16 or float32, one cast to bf16 gives the same
    bits as going through float32 (which holds them exactly) at a fifth of the cost on first load."""
    if not bf16:
        return tensor.to(torch.float32).contiguous()
    if tensor.dtype in (torch.float16, torch.bfloat16, torch.float32):
        return tensor.to(torch.bfloat16).contiguous()
    return tensor.to(torch.float32).to(torch.bfloat16).contiguous()


def load_plain_bert(folder: Path, kind: str, bf16: bool) -> PlainBert | None:
    """The encoder in ``folder`` as :class:`PlainBert` (float32 weights, then bf16 when ``bf16``, as
    transformers loads them), or None when this module does not support it."""
    try:
        return _load(Path(folder), kind, bf16)
    except Unsupported as reason:
        logger.debug("{folder}: encoding with transformers ({reason})", folder=folder, reason=reason)
        return None


def read_weights(folder: Path) -> dict[str, torch.Tensor]:
    """Every tensor of the folder's one ``model.safetensors`` (:class:`Unsupported` for other layouts)."""
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors"))
    if [f.name for f in files] != [WEIGHTS_FILE] or any(folder.glob("*.bin")):
        raise Unsupported(f"weights are not exactly one {WEIGHTS_FILE}")
    return load_file(str(folder / WEIGHTS_FILE))


def _load(folder: Path, kind: str, bf16: bool) -> PlainBert:
    return bert_from_weights(folder, kind, bf16, read_weights(folder))


def bert_from_weights(folder: Path, kind: str, bf16: bool, stored: dict[str, torch.Tensor]) -> PlainBert:
    """The :class:`PlainBert` of ``kind`` in the tensors ``stored`` (read from ``folder``); the checks of
    :func:`load_plain_bert`."""
    shape = _check_config(_read_json(folder / "config.json"), kind)
    prefix = _DPR_PREFIX.get(kind, "")
    if not prefix and not any(name.startswith("embeddings.") for name in stored):
        raise Unsupported("weight names are not those of a BertModel")
    weights = {name[len(prefix) :]: t for name, t in stored.items() if name.startswith(prefix)}
    if kind in _PROJECTED:  # the projection sits beside bert_model: question_encoder.encode_proj.*
        outer = prefix.split(".", 1)[0] + ".encode_proj."
        weights.update({"encode_proj." + name[len(outer) :]: t for name, t in stored.items() if name.startswith(outer)})
    expected = _expected_shapes(shape)
    has_pooler = kind not in _DPR_PREFIX and "pooler.dense.weight" in weights and "pooler.dense.bias" in weights
    if has_pooler:
        hidden = shape.hidden_size
        expected.update({"pooler.dense.weight": (hidden, hidden), "pooler.dense.bias": (hidden,)})
    missing = [name for name in expected if name not in weights]
    if missing:
        raise Unsupported(f"{len(missing)} weights missing, e.g. {missing[:2]}")
    for name, size in expected.items():
        if tuple(weights[name].shape) != size or not weights[name].is_floating_point():
            raise Unsupported(
                f"{name} is {weights[name].dtype} {tuple(weights[name].shape)}, the configuration says {size}"
            )
    # named as in the file, so that an error points at the tensor a user can find there
    outer = prefix.split(".", 1)[0] + "."
    stored_name = {n: (outer if n.startswith("encode_proj.") else prefix) + n for n in expected}
    check_finite_weights(folder, {stored_name[name]: weights[name] for name in expected})
    tensors = {name: _as_loaded(weights[name], bf16) for name in expected}
    shape = BertShape(**{**shape.__dict__, "has_pooler": has_pooler})
    return PlainBert(shape, tensors, is_dpr=kind in _DPR_PREFIX)


class BertTokenizer:
    """WordPiece tokenisation as transformers' ``BertTokenizer`` does it, called the way
    ``TextEncoder`` calls a transformers tokenizer (lists of texts, optional second texts)."""

    padding_side = "right"

    def __init__(self, backend: Any, pad_token_id: int, truncation_side: str) -> None:
        self._backend = backend
        self.pad_token_id = pad_token_id
        self._truncation_side = truncation_side

    def __call__(
        self,
        texts: list[str],
        pairs: list[str] | None = None,
        truncation: bool | str = True,
        max_length: int | None = None,
        return_attention_mask: bool = False,
    ) -> dict[str, list[list[int]]]:
        strategy = {True: "longest_first", "longest_first": "longest_first", "only_second": "only_second"}.get(
            truncation
        )
        if strategy is None or max_length is None:
            raise ValueError(f"unsupported truncation {truncation!r} / max_length {max_length!r}")
        target = {"max_length": max_length, "stride": 0, "strategy": strategy, "direction": self._truncation_side}
        current = self._backend.truncation
        if current is None or any(current.get(k) != v for k, v in target.items()):
            self._backend.enable_truncation(**target)
        inputs = list(zip(texts, pairs, strict=True)) if pairs is not None else list(texts)
        encodings = self._backend.encode_batch(inputs, add_special_tokens=True)
        out = {"input_ids": [e.ids for e in encodings], "token_type_ids": [e.type_ids for e in encodings]}
        if return_attention_mask:
            out["attention_mask"] = [e.attention_mask for e in encodings]
        return out


def load_bert_tokenizer(folder: Path) -> BertTokenizer | None:
    """The tokenizer of ``folder`` when transformers would build it as a WordPiece ``BertTokenizer``
    from its ``tokenizer.json``, else None."""
    try:
        return load_tokenizer(Path(folder))
    except Unsupported as reason:
        logger.debug("{folder}: tokenizing with transformers ({reason})", folder=folder, reason=reason)
        return None


def _check_tokenizer_settings(config: dict[str, Any], specials: set[str]) -> None:
    """Refuse tokenizer_config.json settings that change tokenisation beyond a plain BertTokenizer."""
    unsupported = [
        k for k in ("extra_special_tokens", "additional_special_tokens", "split_special_tokens") if config.get(k)
    ]
    if config.get("padding_side", "right") != "right" or config.get("backend", "tokenizers") != "tokenizers":
        unsupported.append("padding_side/backend")
    added = config.get("added_tokens_decoder") or {}
    # Folders saved by transformers 4 list the named special tokens here; anything more is refused.
    if not isinstance(added, dict) or any(
        not isinstance(token, dict) or token.get("content") not in specials or not token.get("special")
        for token in added.values()
    ):
        unsupported.append("added_tokens_decoder")
    if unsupported:
        raise Unsupported(f"tokenizer settings {unsupported}")


def _special_token_ids(backend: Any, specials: dict[str, str]) -> dict[str, int]:
    """The id of each named special token, once the backend is known to be WordPiece with only those added."""
    model = backend.model
    settings = (
        getattr(model, "unk_token", None),
        getattr(model, "continuing_subword_prefix", None),
        getattr(model, "max_input_chars_per_word", None),
    )
    if type(model).__name__ != "WordPiece" or settings != (specials["unk_token"], "##", 100):
        raise Unsupported("tokenizer model is not transformers' WordPiece")
    added = backend.get_added_tokens_decoder().values()
    if {a.content for a in added} != set(specials.values()) or any(
        not a.special or a.normalized or a.lstrip or a.rstrip or a.single_word for a in added
    ):
        raise Unsupported("added tokens other than the named special tokens")
    ids = {name: token_id for name, token in specials.items() if (token_id := backend.token_to_id(token)) is not None}
    if len(ids) != len(specials):
        raise Unsupported("special tokens missing from the vocabulary")
    return ids


def load_tokenizer(folder: Path) -> BertTokenizer:
    backend, ids, truncation_side = bert_backend(folder)
    return BertTokenizer(backend, ids["pad_token"], truncation_side)


def bert_backend(folder: Path) -> tuple[Any, dict[str, int], str]:
    """The ``tokenizers.Tokenizer`` of ``folder`` set up as transformers' ``BertTokenizer`` (no padding,
    no truncation), the ids of its named special tokens (``cls_token``, ``sep_token``, ``pad_token``…)
    and its truncation side; :class:`Unsupported` when transformers would build something else."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors

    config = _read_json(folder / "tokenizer_config.json") if (folder / "tokenizer_config.json").is_file() else {}
    if config.get("tokenizer_class") not in BERT_TOKENIZER_CLASSES:
        raise Unsupported(f"tokenizer_class {config.get('tokenizer_class')!r}")
    specials = {
        name: str(config.get(name, default))
        for name, default in (
            ("unk_token", "[UNK]"),
            ("sep_token", "[SEP]"),
            ("pad_token", "[PAD]"),
            ("cls_token", "[CLS]"),
            ("mask_token", "[MASK]"),
        )
    }
    _check_tokenizer_settings(config, set(specials.values()))
    if not (folder / TOKENIZER_FILE).is_file():
        raise Unsupported(f"no {TOKENIZER_FILE}")
    try:
        backend = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
    except Exception as error:  # the Rust side raises plain Exception for unreadable files
        raise Unsupported(f"cannot read {TOKENIZER_FILE}: {error}") from error
    ids = _special_token_ids(backend, specials)
    truncation_side = config.get("truncation_side", "right")
    if truncation_side not in ("right", "left"):
        raise Unsupported(f"truncation_side {truncation_side!r}")
    # What transformers' BertTokenizer sets, whatever tokenizer.json says.
    backend.normalizer = normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=bool(config.get("tokenize_chinese_chars", True)),
        strip_accents=config.get("strip_accents"),
        lowercase=bool(config.get("do_lower_case", True)),
    )
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    cls, sep = specials["cls_token"], specials["sep_token"]
    backend.post_processor = processors.TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0",
        pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
        special_tokens=[(cls, ids["cls_token"]), (sep, ids["sep_token"])],
    )
    backend.no_padding()
    backend.no_truncation()
    backend.encode_special_tokens = False
    return backend, ids, truncation_side
