"""Model folders whose numbers are wrong: weights holding NaN or infinity (saved from a run that
diverged), a config.json claiming sizes its weights do not have (a million layers), and
maximum input lengths that are negative, zero or beyond the model's positions. Each is refused
when the folder is loaded, in one line naming the folder and the tensor or file and field,
before anything large is allocated."""

from __future__ import annotations

import resource
import shutil
import time
from pathlib import Path

import pytest

from tests.helpers.commands import dense_args, index_args, qa_args
from tests.helpers.corpora import write_training_data
from tests.reliability.harness import CliResult, assert_clear_error, cases, cli
from tests.reliability.training_checks import (
    edit_json,
    poison_weights,
    train_command,
)

pytestmark = pytest.mark.usefixtures("one_thread")

# config.json change -> the field the error must name; the tiny models have 2 layers, hidden size 32.
CONFIG_CLAIMS = {
    "a million layers": ({"num_hidden_layers": 1_000_000}, "num_hidden_layers"),
    "three layers, the weights hold two": ({"num_hidden_layers": 3}, "num_hidden_layers"),
    "a billion-token vocabulary": ({"vocab_size": 10**9}, "vocab_size"),
    "a vocabulary larger than the weights'": ({"vocab_size": 100_000}, "vocab_size"),
    "negative hidden size": ({"hidden_size": -5}, "hidden_size"),
    "hidden size of another model": ({"hidden_size": 64, "num_attention_heads": 2}, "hidden_size"),
    "zero positions": ({"max_position_embeddings": 0}, "max_position_embeddings"),
    "layer count as text": ({"num_hidden_layers": "12"}, "num_hidden_layers"),
}
# encoder_config.json max_length -> what the error must say (the tiny model has 128 positions)
MAX_LENGTHS = {
    "negative": (-5, "positive integer"),
    "zero": (0, "positive integer"),
    "text": ("long", "positive integer"),
    "beyond the model's positions": (4096, "128 positions"),
    "absurd": (10**12, "128 positions"),
}


def _copy(source: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(source, tmp_path / "model"))


def _search(store: Path, model: Path, *extra: str):
    return cli(*dense_args(store, model, *extra))


def _train(data: Path, out: Path, model: Path) -> CliResult:
    """python -m training.retriever.train on ``data`` from ``model``: batch 4, 32 tokens."""
    return train_command(
        [
            "--data",
            str(data),
            "--out",
            str(out),
            "--set",
            f"model={model}",
            "--set",
            "batch_size=4",
            "--set",
            "max_length=32",
        ]
    )


@pytest.mark.reliability(category="model folders", expect="clear error")
def test_question_encoder_with_nan_weights(indexed_store: Path, tmp_path: Path, tiny_st_dir: Path) -> None:
    """Searching with a question encoder folder whose weights hold NaN (saved from a run that diverged)"""
    folder = _copy(tiny_st_dir, tmp_path)
    tensor = poison_weights(folder)
    assert_clear_error(_search(indexed_store, folder), str(folder), tensor, "NaN")


@pytest.mark.reliability(category="model folders", expect="clear error")
def test_passage_encoder_with_infinite_weights(tmp_path: Path, tiny_st_dir: Path, small_corpus_file: Path) -> None:
    """Indexing with a passage encoder folder whose weights hold infinity (embedder.model)"""
    folder = _copy(tiny_st_dir, tmp_path)
    tensor = poison_weights(folder, float("inf"))
    result = cli(*index_args(small_corpus_file, tmp_path / "store", folder))
    assert_clear_error(result, str(folder), tensor, "infinite")


@pytest.mark.reliability(category="model folders", expect="clear error")
def test_reader_with_nan_weights(indexed_store: Path, tmp_path: Path, tiny_st_dir: Path, tiny_reader_dir: Path) -> None:
    """Answering questions with a span reader folder whose weights hold NaN (reader.model)"""
    folder = _copy(tiny_reader_dir, tmp_path)
    tensor = poison_weights(folder)
    result = cli(*qa_args(indexed_store, tiny_st_dir, folder))
    assert_clear_error(result, str(folder), tensor, "NaN")


@pytest.mark.reliability(category="model folders", expect="clear error")
def test_training_from_a_nan_model(tmp_path: Path, tiny_bert_dir: Path) -> None:
    """Training DPR (python -m training.retriever.train) from a model folder whose weights hold NaN"""
    folder = _copy(tiny_bert_dir, tmp_path)
    tensor = poison_weights(folder)
    data = write_training_data(tmp_path / "train.jsonl")
    result = _train(data, tmp_path / "run", folder)
    assert_clear_error(result, str(folder), tensor, "NaN")
    assert not (tmp_path / "run" / "checkpoints").exists(), "training started"


@cases("change, field", CONFIG_CLAIMS)
@pytest.mark.reliability(category="model folders", expect="clear error")
def test_config_claiming_other_sizes(
    indexed_store: Path,
    tmp_path: Path,
    tiny_st_dir: Path,
    change: dict,
    field: str,
    record_property: pytest.RecordProperty,
) -> None:
    """Searching with an encoder folder whose config.json claims sizes its weights do not have"""
    folder = _copy(tiny_st_dir, tmp_path)
    edit_json(folder / "config.json", **change)
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    result = _search(indexed_store, folder)
    seconds = time.perf_counter() - start
    assert_clear_error(result, str(folder), "config.json", field)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
    assert seconds < 5 and grown_mb < 200, f"{seconds:.1f} s, peak memory +{grown_mb:.0f} MB before the error"
    record_property("seconds to the error (whole command)", round(seconds, 2))


@pytest.mark.reliability(category="model folders", expect="clear error")
def test_reader_config_claiming_a_million_layers(
    indexed_store: Path, tmp_path: Path, tiny_st_dir: Path, tiny_reader_dir: Path
) -> None:
    """Answering questions with a span reader folder whose config.json claims a million layers"""
    folder = _copy(tiny_reader_dir, tmp_path)
    edit_json(folder / "config.json", num_hidden_layers=1_000_000)
    result = cli(*qa_args(indexed_store, tiny_st_dir, folder))
    assert_clear_error(result, str(folder / "config.json"), "num_hidden_layers")


@pytest.mark.reliability(category="model folders", expect="clear error")
def test_training_from_a_config_claiming_more_layers(tmp_path: Path, tiny_bert_dir: Path) -> None:
    """Training DPR from a model folder whose config.json claims 200 layers; its weights hold 2"""
    folder = _copy(tiny_bert_dir, tmp_path)
    edit_json(folder / "config.json", num_hidden_layers=200)
    data = write_training_data(tmp_path / "train.jsonl")
    result = _train(data, tmp_path / "run", folder)
    assert_clear_error(result, str(folder), "config.json", "num_hidden_layers is 200", "2 layers")


@cases("value, problem", MAX_LENGTHS)
@pytest.mark.reliability(category="model folders", expect="clear error")
def test_encoder_config_max_length(
    indexed_store: Path, tmp_path: Path, tiny_st_dir: Path, value: object, problem: str
) -> None:
    """Searching with an encoder folder whose encoder_config.json sets max_length out of range"""
    folder = _copy(tiny_st_dir, tmp_path)
    edit_json(folder / "encoder_config.json", pooling="mean", normalize=True, max_length=value)
    assert_clear_error(_search(indexed_store, folder), str(folder / "encoder_config.json"), "max_length", problem)


@pytest.mark.reliability(category="model folders", expect="clear error")
def test_sentence_transformers_max_seq_length(indexed_store: Path, tmp_path: Path, tiny_st_dir: Path) -> None:
    """Searching with a sentence-transformers folder whose sentence_bert_config.json says max_seq_length -5"""
    folder = _copy(tiny_st_dir, tmp_path)
    edit_json(folder / "sentence_bert_config.json", max_seq_length=-5)
    assert_clear_error(_search(indexed_store, folder), str(folder / "sentence_bert_config.json"), "max_seq_length")


@pytest.mark.parametrize(
    "value, problem",
    [(-5, "positive integer"), (0, "positive integer"), (4096, "128 positions")],
    ids=["negative", "zero", "beyond the model's positions"],
)
@pytest.mark.reliability(category="model folders", expect="clear error")
def test_max_length_setting(indexed_store: Path, tiny_st_dir: Path, value: int, problem: str) -> None:
    """Searching with dense.max_length set to a negative number, zero, or more than the model's positions"""
    assert_clear_error(_search(indexed_store, tiny_st_dir, "--set", f"dense.max_length={value}"), "max_length", problem)
