"""Haystack's ``device`` init parameter on components that run on the CPU only: a CPU device is
accepted, so a pipeline written for Haystack's own components loads, and any other is refused."""

from __future__ import annotations

from typing import Any

from haystack.utils import ComponentDevice


def cpu_only_device(component: str, device: ComponentDevice | None) -> ComponentDevice | None:
    """``device`` when it is None or a CPU; a GPU, MPS or a device map raises a one-line ``ValueError``
    naming ``component``."""
    if device is None:
        return None
    if not isinstance(device, ComponentDevice):
        raise TypeError(f"{component} takes a haystack ComponentDevice as device, got {type(device).__name__}")
    if device.has_multiple_devices:
        given = f"device map {device.to_dict()['device_map']} given"
    elif device.to_torch_str().partition(":")[0] != "cpu":
        given = f"device={device.to_torch_str()!r} given"
    else:
        return device
    raise ValueError(f"{component} runs on the CPU only ({given}); drop 'device' or set it to cpu")


def device_parameter(device: ComponentDevice | None) -> dict[str, Any]:
    """The ``device`` entry of a component's ``to_dict`` as Haystack writes it; none when no device was
    given, so pipeline files written without one stay the same."""
    return {} if device is None else {"device": device.to_dict()}
