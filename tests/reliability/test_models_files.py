"""Model folders: a damaged or mismatched file in an encoder or reader folder is reported in one
line naming the folder and the file, whichever component loads it, and a folder asking for
remote code never runs it."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.commands import dense_args, index_args, qa_args
from tests.helpers.corpora import write_training_data
from tests.helpers.models import tiny_config
from tests.reliability.harness import PIPELINES, assert_clear_error, assert_success, cases, cli
from tests.reliability.training_checks import train_command

pytestmark = pytest.mark.usefixtures("one_thread")

WEIGHTS = "model.safetensors"


def _random_bytes(folder: Path) -> None:
    (folder / WEIGHTS).write_bytes(os.urandom(4096))


def _truncated(folder: Path) -> None:
    data = (folder / WEIGHTS).read_bytes()
    (folder / WEIGHTS).write_bytes(data[: len(data) // 2])


def _lying_header(folder: Path) -> None:
    """The header claims a tensor extends far beyond the end of the file."""
    data = (folder / WEIGHTS).read_bytes()
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    name = next(k for k in header if k != "__metadata__")
    header[name]["data_offsets"][1] += 10**9
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    (folder / WEIGHTS).write_bytes(len(encoded).to_bytes(8, "little") + encoded + data[8 + size :])


def _config_not_json(folder: Path) -> None:
    (folder / "config.json").write_text('{"model_type": "bert",', encoding="utf-8")


def _config_of_another_architecture(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config.update(architectures=["GPT2Model"], model_type="gpt2")
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")


def _tokenizer_missing(folder: Path) -> None:
    for file in [*folder.glob("tokenizer*"), *folder.glob("vocab*"), *folder.glob("special_tokens*")]:
        file.unlink()


def _weights_of_another_model(folder: Path) -> None:
    """Weights of a wider BERT: every tensor has another shape than config.json says."""
    from transformers import BertConfig, BertModel

    other = BertModel(tiny_config(BertConfig, 30522, hidden_size=48))
    other.save_pretrained(folder / "other")
    shutil.move(folder / "other" / WEIGHTS, folder / WEIGHTS)
    shutil.rmtree(folder / "other")


DAMAGE: dict[str, tuple[Callable[[Path], None], tuple[str, ...]]] = {
    "weights are random bytes": (_random_bytes, (WEIGHTS, "damaged")),
    "weights truncated": (_truncated, (WEIGHTS, "damaged")),
    "weights header lies about sizes": (_lying_header, (WEIGHTS, "damaged")),
    "config.json is not JSON": (_config_not_json, ("config.json",)),
    "config.json names another architecture": (_config_of_another_architecture, ("config.json", "gpt2")),
    "tokenizer files missing": (_tokenizer_missing, ("tokenizer",)),
    "weights of another model": (_weights_of_another_model, (WEIGHTS, "do not fit", "config.json")),
}


def _damaged_copy(source: Path, tmp_path: Path, damage: Callable[[Path], None]) -> Path:
    folder = Path(shutil.copytree(source, tmp_path / "model"))
    damage(folder)
    return folder


@cases("damage, fragments", DAMAGE)
@pytest.mark.reliability(category="model folders", expect="clear error")
def test_damaged_question_encoder(
    indexed_store: Path, tmp_path: Path, tiny_st_dir: Path, damage: Callable, fragments: tuple[str, ...]
) -> None:
    """Searching with a question encoder folder whose files are damaged (dense.model)"""
    folder = _damaged_copy(tiny_st_dir, tmp_path, damage)
    result = cli(*dense_args(indexed_store, folder))
    assert_clear_error(result, str(folder), *fragments)


@pytest.mark.parametrize(
    "damage", [_truncated, _weights_of_another_model], ids=["weights truncated", "weights of another model"]
)
@pytest.mark.reliability(category="model folders", expect="clear error")
def test_damaged_passage_encoder(tmp_path: Path, tiny_st_dir: Path, small_corpus_file: Path, damage: Callable) -> None:
    """Indexing with a passage encoder folder whose weights are damaged (embedder.model)"""
    folder = _damaged_copy(tiny_st_dir, tmp_path, damage)
    result = cli(*index_args(small_corpus_file, tmp_path / "store", folder))
    assert_clear_error(result, str(folder), WEIGHTS)


@pytest.mark.parametrize(
    "damage",
    [_lying_header, _weights_of_another_model],
    ids=["weights header lies about sizes", "weights of another model"],
)
@pytest.mark.reliability(category="model folders", expect="clear error")
def test_damaged_reader(
    indexed_store: Path, tmp_path: Path, tiny_st_dir: Path, tiny_reader_dir: Path, damage: Callable
) -> None:
    """Answering questions with a span reader folder whose weights are damaged (reader.model)"""
    folder = _damaged_copy(tiny_reader_dir, tmp_path, damage)
    result = cli(*qa_args(indexed_store, tiny_st_dir, folder))
    assert_clear_error(result, str(folder), WEIGHTS)


@pytest.mark.reliability(category="model folders", expect="clear error")
def test_damaged_start_model_of_training(tmp_path: Path, tiny_bert_dir: Path) -> None:
    """Training DPR from a model folder whose weights are truncated (DPRTrainer model)"""
    folder = _damaged_copy(tiny_bert_dir, tmp_path, _truncated)
    data = write_training_data(tmp_path / "train.jsonl")
    result = cli(
        "run",
        PIPELINES / "train_dpr.yml",
        "--input",
        f"data={data}",
        "--set",
        f"trainer.model={folder}",
        "--set",
        f"trainer.output_dir={tmp_path / 'run'}",
        "--set",
        "trainer.batch_size=4",
        "--set",
        "trainer.progress_bar=false",
    )
    assert_clear_error(result, str(folder), WEIGHTS, "damaged")
    result = train_command(
        ["--data", str(data), "--out", str(tmp_path / "run2"), "--set", f"model={folder}", "--set", "batch_size=4"]
    )
    assert_clear_error(result, str(folder), WEIGHTS, "damaged")


@pytest.mark.reliability(category="model folders", expect="correct result")
def test_config_asking_for_remote_code(indexed_store: Path, tmp_path: Path, tiny_st_dir: Path) -> None:
    """Searching with an encoder folder whose config.json points at a Python file of its own (auto_map)"""
    folder = Path(shutil.copytree(tiny_st_dir, tmp_path / "model"))
    marker = tmp_path / "code-ran"
    (folder / "modeling_evil.py").write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config["auto_map"] = {"AutoModel": "modeling_evil.EvilModel", "AutoConfig": "modeling_evil.EvilConfig"}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    result = cli(*dense_args(indexed_store, folder, "--json"))
    assert not marker.exists(), "the folder's own Python code was run"
    # The folder is the store's encoder plus the code reference: ignoring the code, the search works.
    assert_success(result)
    assert json.loads(result.out)["dense"]["documents"]
