"""Checks of Haystack's ``device`` init parameter on a component: none written by default, the CPU
kept through ``to_dict``/``from_dict`` and a YAML pipeline, a GPU refused in one line."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from haystack import Pipeline
from haystack.utils import ComponentDevice

CPU = ComponentDevice.from_str("cpu")


def assert_cpu_device_round_trips(make: Callable[..., Any]) -> None:
    """``make()`` writes no device; ``make(device=CPU)`` keeps it through ``from_dict`` and ``Pipeline.loads``."""
    assert "device" not in make().to_dict()["init_parameters"]
    assert "device" not in make(device=None).to_dict()["init_parameters"]
    component = make(device=CPU)
    data = component.to_dict()
    assert data["init_parameters"]["device"] == {"type": "single", "device": "cpu"}
    assert type(component).from_dict(json.loads(json.dumps(data))).to_dict() == data
    pipeline = Pipeline()
    pipeline.add_component("node", component)
    text = pipeline.dumps()
    assert "device: cpu" in text
    loaded = Pipeline.loads(text, allowed_modules=["dpr_components"]).get_component("node")
    assert type(loaded) is type(component) and loaded.to_dict() == data


def assert_gpu_device_refused(make: Callable[..., Any], name: str) -> None:
    """``make(device=cuda:0)`` raises the one-line error naming the component ``name``."""
    with pytest.raises(ValueError) as refused:
        make(device=ComponentDevice.from_str("cuda:0"))
    assert str(refused.value) == (
        f"{name} runs on the CPU only (device='cuda:0' given); drop 'device' or set it to cpu"
    )
