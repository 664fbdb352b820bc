"""Encoder pairing: questions must be encoded by the question encoder trained with the passage
encoder that indexed the store. Any other combination is refused before the first search, however
the folders were copied or named; the right pair searches as usual."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.commands import dense_args, index_args
from tests.reliability.harness import assert_clear_error, assert_success, cli


@pytest.fixture(scope="session")
def trained_pair(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: Path) -> Path:
    """A DPR pair saved by the project (``question_encoder/`` + ``passage_encoder/``)."""
    from dpr_components.encoder_training.convert import to_dpr

    return to_dpr(str(tiny_bert_dir), tmp_path_factory.mktemp("pair") / "pair")


def _search(store: Path, model: Path) -> list[str]:
    return dense_args(store, model, "--json")


@pytest.mark.reliability(category="encoder pairing", expect="clear error")
def test_question_encoder_of_another_pair(indexed_store: Path, trained_pair: Path) -> None:
    """Searching a store indexed by one encoder with the question encoder of another pair"""
    result = cli(*_search(indexed_store, trained_pair / "question_encoder"))
    assert_clear_error(result, "embedded by another passage encoder", "re-index")


@pytest.mark.reliability(category="encoder pairing", expect="clear error")
def test_question_encoder_copied_out_of_its_pair(indexed_store: Path, trained_pair: Path, tmp_path: Path) -> None:
    """Searching with a question encoder copied out of its pair's folder (no passage_encoder/ beside it)"""
    lone = Path(shutil.copytree(trained_pair / "question_encoder", tmp_path / "my-question-encoder"))
    result = cli(*_search(indexed_store, lone))
    assert_clear_error(result, "embedded by another passage encoder", str(lone))


@pytest.mark.reliability(category="encoder pairing", expect="clear error")
def test_passage_encoder_as_question_encoder(tmp_path: Path, trained_pair: Path, small_corpus_file: Path) -> None:
    """Searching with the passage encoder (passage_encoder/) given as the question encoder"""
    store = tmp_path / "store"
    assert_success(cli(*index_args(small_corpus_file, store, trained_pair / "passage_encoder")))
    result = cli(*_search(store, trained_pair / "passage_encoder"))
    assert_clear_error(result, "is a passage encoder", "question_encoder/")


@pytest.mark.reliability(category="encoder pairing", expect="clear error")
def test_search_with_another_single_encoder(
    tmp_path: Path, trained_pair: Path, small_corpus_file: Path, tiny_st_dir: Path
) -> None:
    """Searching a store indexed by a trained pair's passage encoder with a single (sentence-transformers) encoder"""
    store = tmp_path / "store"
    assert_success(cli(*index_args(small_corpus_file, store, trained_pair / "passage_encoder")))
    result = cli(*_search(store, tiny_st_dir))
    assert_clear_error(result, "embedded by another passage encoder")


@pytest.mark.reliability(category="encoder pairing", expect="correct result")
def test_copied_question_encoder_with_its_store(tmp_path: Path, trained_pair: Path, small_corpus_file: Path) -> None:
    """Searching with a copied question encoder a store indexed by its own passage encoder"""
    store = tmp_path / "store"
    assert_success(cli(*index_args(small_corpus_file, store, trained_pair / "passage_encoder")))
    lone = Path(shutil.copytree(trained_pair / "question_encoder", tmp_path / "my-question-encoder"))
    result = cli(*_search(store, lone))
    assert_success(result)
    assert len(json.loads(result.out)["dense"]["documents"]) == 6
