"""Haystack's ``device`` argument on the retrievers that encode the question: the CPU accepted and
serialised, a GPU refused."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever
from haystack_integrations.components.retrievers.dpr.hybrid_retriever import HybridRetriever
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.helpers.devices import CPU, assert_cpu_device_round_trips, assert_gpu_device_refused

RETRIEVERS = [DenseRetriever, HybridRetriever]


@pytest.mark.parametrize("retriever", RETRIEVERS, ids=lambda c: c.__name__)
def test_the_cpu_device_round_trips(retriever: type, tiny_st_dir: Path, tmp_path: Path) -> None:
    store = EmbeddedDocumentStore(path=str(tmp_path / "store"))
    assert_cpu_device_round_trips(partial(retriever, document_store=store, model=str(tiny_st_dir)))


def test_the_question_encoder_gets_the_device(tiny_st_dir: Path) -> None:
    retriever = HybridRetriever(document_store=EmbeddedDocumentStore(), model=str(tiny_st_dir), device=CPU)
    assert retriever.dense.embedder.device == CPU


@pytest.mark.parametrize("retriever", RETRIEVERS, ids=lambda c: c.__name__)
def test_a_gpu_device_is_refused(retriever: type, tiny_st_dir: Path) -> None:
    make = partial(retriever, document_store=EmbeddedDocumentStore(), model=str(tiny_st_dir))
    assert_gpu_device_refused(make, retriever.__name__)
