"""Shared fixtures and the test tiers: offline settings, one torch thread, tiny random models, small corpora."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

for _name, _value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HAYSTACK_TELEMETRY_ENABLED": "False",
}.items():
    os.environ.setdefault(_name, _value)

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from dpr_components.utils.settings import data_dir  # noqa: E402
from tests.helpers.commands import index_args  # noqa: E402
from tests.helpers.corpora import ADAPT_CORPUS, SMALL_CORPUS, write_jsonl  # noqa: E402
from tests.helpers.models import (  # noqa: E402
    bundled_tokenizer,
    one_torch_thread,
    save_tiny_bert,
    save_with_tokenizer,
    tiny_config,
)

# Property tests (hypothesis) run a fixed, reproducible budget: few examples, the same ones on every run,
# no per-example deadline (a first request warms the models); HYPOTHESIS_PROFILE=dev explores more.
settings.register_profile(
    "ci",
    max_examples=20,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Fixtures that only the integration tier may use: the real data.
INTEGRATION_FIXTURES = frozenset({"shared_data"})


def is_integration(item: pytest.Item) -> bool:
    """Whether ``item`` belongs to the integration tier: marked so, or asking for an integration fixture."""
    fixtures = getattr(item, "fixturenames", ())
    return item.get_closest_marker("integration") is not None or not INTEGRATION_FIXTURES.isdisjoint(fixtures)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in exactly one tier (before ``-m`` selects): ``integration`` as marked, ``unit`` otherwise."""
    for item in items:
        if not is_integration(item):
            item.add_marker(pytest.mark.unit)
        elif item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.integration)


@pytest.fixture()
def one_thread() -> Iterator[None]:
    """One torch thread during the test; modules of tiny-model tests use it for every test (``usefixtures``)."""
    with one_torch_thread():
        yield


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plain BERT folder with random weights (real WordPiece vocabulary)."""
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_bert"), bundled_tokenizer(), seed=0)


@pytest.fixture(scope="session")
def tokenizer(tiny_bert_dir: Path):
    """The tokenizer of ``tiny_bert_dir``."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_bert_dir))


@pytest.fixture(scope="session")
def tiny_encoder_dir(tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BERT with 512 positions, so readers built on it take the default max_length."""
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_encoder"), tokenizer, seed=0, max_position_embeddings=512)


@pytest.fixture(scope="session")
def tiny_reader_dir(tiny_encoder_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Our layout: a DPRReader around a tiny random BERT, heads freshly initialised."""
    from dpr_components.reader_training.model import reader_from_encoder
    from dpr_components.readers.model import save_reader

    reader, tokenizer = reader_from_encoder(str(tiny_encoder_dir), seed=3)
    path = tmp_path_factory.mktemp("tiny_reader") / "reader"
    save_reader(reader, tokenizer, path)
    return path


@pytest.fixture(scope="session")
def tiny_dpr_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """HF DPR layout: a DPRQuestionEncoder and a DPRContextEncoder folder."""
    import torch
    from transformers import DPRConfig, DPRContextEncoder, DPRQuestionEncoder

    torch.manual_seed(1)
    tokenizer = bundled_tokenizer()
    config = tiny_config(DPRConfig, len(tokenizer))
    dirs = [
        save_with_tokenizer(model_class(config), tokenizer, tmp_path_factory.mktemp(f"tiny_dpr_{name}"))
        for name, model_class in (("question", DPRQuestionEncoder), ("context", DPRContextEncoder))
    ]
    return dirs[0], dirs[1]


@pytest.fixture(scope="session")
def tiny_projected_dpr_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DPRContextEncoder folder whose [CLS] vector goes through a projection layer (projection_dim 8)."""
    import torch
    from transformers import DPRConfig, DPRContextEncoder

    torch.manual_seed(2)
    tokenizer = bundled_tokenizer()
    model = DPRContextEncoder(tiny_config(DPRConfig, len(tokenizer), projection_dim=8))
    return save_with_tokenizer(model, tokenizer, tmp_path_factory.mktemp("tiny_dpr_projected"))


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


@pytest.fixture()
def small_corpus_file(tmp_path: Path) -> Path:
    """SMALL_CORPUS as a JSON-lines file."""
    return write_jsonl(tmp_path / "corpus.jsonl", SMALL_CORPUS)


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
    assert main(index_args(small_corpus_file, store, tiny_st_dir)) == 0
    return store


@pytest.fixture()
def adapt_store(tmp_path: Path, tiny_st_dir: Path) -> Path:
    """ADAPT_CORPUS indexed by pipelines/index.yml with the tiny encoder (12 passages of 28 words)."""
    from dpr_components.cli.main import main

    store = tmp_path / "adapt_store"
    assert main(index_args(write_jsonl(tmp_path / "adapt.jsonl", ADAPT_CORPUS), store, tiny_st_dir)) == 0
    return store
