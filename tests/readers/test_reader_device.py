"""Haystack's ``device`` argument on the span reader: the CPU accepted and serialised, a GPU refused."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from haystack_integrations.components.readers.dpr.span_reader import SpanReader
from tests.helpers.devices import CPU, assert_cpu_device_round_trips, assert_gpu_device_refused


def test_the_cpu_device_round_trips(tiny_reader_dir: Path) -> None:
    assert_cpu_device_round_trips(partial(SpanReader, model=str(tiny_reader_dir)))
    assert SpanReader(model=str(tiny_reader_dir), device=CPU).device == CPU


def test_a_gpu_device_is_refused(tiny_reader_dir: Path) -> None:
    assert_gpu_device_refused(partial(SpanReader, model=str(tiny_reader_dir)), "SpanReader")
