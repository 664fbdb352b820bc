"""Question encoding in plain torch (dpr_components.encoders.plain_bert) against transformers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.model_layout import detect_layout, resolve_model_path
from dpr_components.encoders.plain_bert import (
    PlainBert,
    load_bert_tokenizer,
    load_plain_bert,
)
from dpr_components.encoders.text_encoder import TextEncoder
from tests.helpers.models import tiny_config
from tests.helpers.paths import REPO

TRAINED_QUESTION_ENCODER = REPO / "models" / "dpr-minilm-multi" / "question_encoder"
TINY_LENGTH = 100  # the tiny test models have 128 positions; the long questions are cut at this length

QUESTIONS = [
    "who wrote hamlet",
    "",
    "Qui a écrit « Les Misérables » ? naïve café 東京 😀 ǅ ß ﬁ",
    "[MASK] is the [cls] capital of [SEP] france?",
    "  spaces\tand\nnewlines\u200b and control \x07 characters  ",
    "what is the tallest mountain in the world and how high is it in metres above sea level",
    "a" * 300,
    "truncated " * 400,
]


def _pair(
    model: str, pooling: str, precision: str, max_length: int | None = None
) -> tuple[np.ndarray, np.ndarray, TextEncoder]:
    """Vectors of QUESTIONS from the plain-torch and the transformers path (``max_length`` None: the model's)."""
    settings = EncoderSettings(model=model, pooling=pooling, precision=precision, max_length=max_length)  # type: ignore[arg-type]
    plain = TextEncoder(settings, batch_size=3, plain_torch=True)  # small batches: padded rows in most
    reference = TextEncoder(settings, batch_size=3)
    return plain.encode_questions(QUESTIONS), reference.encode_questions(QUESTIONS), plain


def _assert_same_vectors(ours: np.ndarray, theirs: np.ndarray) -> None:
    np.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)
    cosine = (ours * theirs).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
    assert cosine.min() >= 0.99999


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("pooling", ["auto", "cls", "mean", "pooler"])
def test_tiny_bert_equals_transformers(tiny_bert_dir: Path, pooling: str, precision: str) -> None:
    ours, theirs, encoder = _pair(str(tiny_bert_dir), pooling, precision, TINY_LENGTH)
    assert isinstance(encoder._model, PlainBert)
    _assert_same_vectors(ours, theirs)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("pooling", ["auto", "mean"])
def test_tiny_dpr_encoders_equal_transformers(tiny_dpr_dirs: tuple[Path, Path], pooling: str, precision: str) -> None:
    for folder in tiny_dpr_dirs:
        ours, theirs, encoder = _pair(str(folder), pooling, precision, TINY_LENGTH)
        assert isinstance(encoder._model, PlainBert) and encoder._model.is_dpr
        _assert_same_vectors(ours, theirs)


def test_dpr_projection_equals_transformers(tmp_path: Path, tiny_bert_dir: Path) -> None:
    import torch
    from transformers import DPRConfig, DPRQuestionEncoder

    torch.manual_seed(2)
    folder = tmp_path / "projected"
    config = tiny_config(DPRConfig, 30522, projection_dim=16, max_position_embeddings=512)
    DPRQuestionEncoder(config).save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny_bert_dir / name, folder / name)
    ours, theirs, encoder = _pair(str(folder), "pooler", "fp32", TINY_LENGTH)
    assert isinstance(encoder._model, PlainBert) and ours.shape == (len(QUESTIONS), 16)
    _assert_same_vectors(ours, theirs)


@pytest.mark.parametrize("precision", ["auto", "fp32"])
@pytest.mark.integration
def test_bundled_minilm_equals_transformers(precision: str) -> None:
    ours, theirs, encoder = _pair("bundled:all-MiniLM-L6-v2", "auto", precision)
    assert isinstance(encoder._model, PlainBert)
    _assert_same_vectors(ours, theirs)


@pytest.mark.parametrize("precision", ["bf16", "fp32"])  # its weights are stored as float16
@pytest.mark.integration
def test_trained_question_encoder_equals_transformers(precision: str) -> None:
    if not (TRAINED_QUESTION_ENCODER / "model.safetensors").is_file():
        pytest.skip("the trained question encoder is not in this checkout")
    ours, theirs, encoder = _pair(str(TRAINED_QUESTION_ENCODER), "auto", precision)
    assert isinstance(encoder._model, PlainBert)
    _assert_same_vectors(ours, theirs)


def test_tokenizer_equals_transformers_for_texts_and_pairs() -> None:
    from transformers import AutoTokenizer

    folder = resolve_model_path("bundled:all-MiniLM-L6-v2")
    ours, theirs = load_bert_tokenizer(folder), AutoTokenizer.from_pretrained(str(folder))
    assert ours is not None
    for max_length in (8, 64, 512):
        kwargs = {"truncation": True, "max_length": max_length, "return_attention_mask": False}
        assert ours(QUESTIONS, None, **kwargs) == dict(theirs(QUESTIONS, None, **kwargs))
        # Titles kept whole, texts cut (only_second): DPR's passage input. Titles fit in 64 tokens.
        titles = ["Hamlet", "Les Misérables", "[SEP] title", "", "x " * 20, "t", "東京", "A title, with punctuation!"]
        kwargs["truncation"] = "only_second"
        if max_length >= 64:
            assert ours(titles, QUESTIONS, **kwargs) == dict(theirs(titles, QUESTIONS, **kwargs))


def _copy(folder: Path, target: Path) -> Path:
    shutil.copytree(folder, target)
    return target


def _edit_json(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    "change",
    [
        {"hidden_act": "gelu_new"},
        {"position_embedding_type": "relative_key"},
        {"is_decoder": True},
        {"model_type": "roberta"},
        {"chunk_size_feed_forward": 1},
        {"intermediate_size": 40},
    ],
)
def test_unsupported_configurations_fall_back_to_transformers(
    tiny_bert_dir: Path, tmp_path: Path, change: dict
) -> None:
    folder = _copy(tiny_bert_dir, tmp_path / "model")
    _edit_json(folder / "config.json", **change)
    assert load_plain_bert(folder, detect_layout(folder).kind, bf16=False) is None
    if "model_type" in change or "intermediate_size" in change:
        return  # transformers builds another model or refuses the weights; the fallback itself is checked above
    encoder = TextEncoder(EncoderSettings(model=str(folder), precision="fp32"), plain_torch=True)
    vectors = encoder.encode_questions(["who wrote hamlet"])
    assert not isinstance(encoder._model, PlainBert) and vectors.shape == (1, 32)


def test_weights_under_another_prefix_fall_back(tiny_bert_dir: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    folder = _copy(tiny_bert_dir, tmp_path / "model")
    weights = load_file(str(folder / "model.safetensors"))
    save_file({f"bert.{name}": tensor for name, tensor in weights.items()}, str(folder / "model.safetensors"))
    assert load_plain_bert(folder, "hf", bf16=False) is None


def test_pooler_pooling_without_pooler_weights_falls_back(tiny_bert_dir: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    folder = _copy(tiny_bert_dir, tmp_path / "model")
    weights = load_file(str(folder / "model.safetensors"))
    save_file({n: t for n, t in weights.items() if not n.startswith("pooler.")}, str(folder / "model.safetensors"))
    model = load_plain_bert(folder, "hf", bf16=False)
    assert model is not None and not model.config.has_pooler
    encoder = TextEncoder(EncoderSettings(model=str(folder), pooling="pooler", precision="fp32"), plain_torch=True)
    encoder.load()
    assert not isinstance(encoder._model, PlainBert)


@pytest.mark.parametrize(
    "change",
    [
        {"tokenizer_class": "RobertaTokenizer"},
        {"tokenizer_class": None},
        {"padding_side": "left"},
        {"added_tokens_decoder": {"30522": {"content": "<new>", "special": False}}},
    ],
)
def test_unsupported_tokenizers_fall_back(tiny_bert_dir: Path, tmp_path: Path, change: dict) -> None:
    folder = _copy(tiny_bert_dir, tmp_path / "model")
    _edit_json(folder / "tokenizer_config.json", **change)
    assert load_bert_tokenizer(folder) is None


def test_special_tokens_listed_in_tokenizer_config_are_supported(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    folder = _copy(resolve_model_path("bundled:all-MiniLM-L6-v2"), tmp_path / "model")
    named = ((0, "[PAD]"), (100, "[UNK]"), (101, "[CLS]"), (102, "[SEP]"), (103, "[MASK]"))
    flags = {"special": True, "normalized": False, "lstrip": False, "rstrip": False, "single_word": False}
    listed = {str(i): {"content": token, **flags} for i, token in named}
    _edit_json(folder / "tokenizer_config.json", added_tokens_decoder=listed)
    ours, theirs = load_bert_tokenizer(folder), AutoTokenizer.from_pretrained(str(folder))
    assert ours is not None
    kwargs = {"truncation": True, "max_length": 64, "return_attention_mask": False}
    assert ours(QUESTIONS, None, **kwargs) == dict(theirs(QUESTIONS, None, **kwargs))


def test_extra_added_token_in_tokenizer_json_falls_back(tiny_bert_dir: Path, tmp_path: Path) -> None:
    folder = _copy(tiny_bert_dir, tmp_path / "model")
    data = json.loads((folder / "tokenizer.json").read_text())
    data["added_tokens"].append(
        {
            "id": 999,
            "content": "hamlet",
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": True,
            "special": False,
        }
    )
    (folder / "tokenizer.json").write_text(json.dumps(data))
    assert load_bert_tokenizer(folder) is None


def test_search_command_does_not_import_transformers(indexed_store: Path, tiny_st_dir: Path, tmp_path: Path) -> None:
    """The command line path (``main()`` reading ``sys.argv``) answers a question without
    transformers' model code and closes the store before the interpreter shuts down."""
    store = shutil.copytree(indexed_store, tmp_path / "store")  # this test process may hold the original open
    argv = [
        "haystack",
        "run",
        str(REPO / "pipelines" / "search.yml"),
        "--store",
        str(store),
        "--set",
        f"hybrid.model={tiny_st_dir}",
        "-q",
        "who wrote hamlet",
        "--top-k",
        "1",
        "--json",
    ]
    code = (
        "import json, os, sys\n"
        "from dpr_components.cli.main import main\n"
        f"sys.argv = {argv!r}\n"
        "code = main()\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('transformers'))\n"
        f"wal = {str(store / 'documents.sqlite-wal')!r}\n"
        "print(json.dumps({'code': code, 'loaded': loaded, 'store_open': os.path.exists(wal)}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    result, report = json.loads(lines[0]), json.loads(lines[-1])
    assert report["code"] == 0 and report["loaded"] == []
    # SQLite removes its WAL file when the last connection closes: main() closed the store itself.
    assert report["store_open"] is False
    assert len(result["hybrid"]["documents"]) == 1  # random tiny weights: which passage wins is arbitrary
