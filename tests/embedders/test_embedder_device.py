"""Haystack's ``device`` argument on the embedders: the CPU accepted and serialised, a GPU refused."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from haystack_integrations.components.embedders.dpr.passage_embedder import PassageEmbedder
from haystack_integrations.components.embedders.dpr.question_embedder import QuestionEmbedder
from tests.helpers.devices import CPU, assert_cpu_device_round_trips, assert_gpu_device_refused

EMBEDDERS = [QuestionEmbedder, PassageEmbedder]


@pytest.mark.parametrize("embedder", EMBEDDERS, ids=lambda c: c.__name__)
def test_the_cpu_device_round_trips(embedder: type, tiny_st_dir: Path) -> None:
    assert_cpu_device_round_trips(partial(embedder, model=str(tiny_st_dir)))
    assert embedder(model=str(tiny_st_dir), device=CPU).device == CPU


@pytest.mark.parametrize("embedder", EMBEDDERS, ids=lambda c: c.__name__)
def test_a_gpu_device_is_refused(embedder: type, tiny_st_dir: Path) -> None:
    assert_gpu_device_refused(partial(embedder, model=str(tiny_st_dir)), embedder.__name__)
