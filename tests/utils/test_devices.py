"""The shared check of Haystack's ``device`` argument: None and CPUs pass, anything else is refused in one line."""

from __future__ import annotations

import pytest
from haystack.utils import ComponentDevice
from haystack.utils.device import Device, DeviceMap

from dpr_components.utils.devices import cpu_only_device, device_parameter


@pytest.mark.parametrize("device", [None, ComponentDevice.from_str("cpu"), ComponentDevice.from_single(Device.cpu())])
def test_none_and_the_cpu_pass(device: ComponentDevice | None) -> None:
    assert cpu_only_device("SpanReader", device) is device


@pytest.mark.parametrize(
    ("device", "given"),
    [
        (ComponentDevice.from_str("cuda:0"), "device='cuda:0' given"),
        (ComponentDevice.from_str("mps"), "device='mps' given"),
        (
            ComponentDevice.from_multiple(DeviceMap({"encoder": Device.gpu(1), "head": Device.cpu()})),
            "device map {'encoder': 'cuda:1', 'head': 'cpu'} given",
        ),
    ],
)
def test_other_devices_are_refused_in_one_line(device: ComponentDevice, given: str) -> None:
    with pytest.raises(ValueError) as refused:
        cpu_only_device("SpanReader", device)
    assert str(refused.value) == f"SpanReader runs on the CPU only ({given}); drop 'device' or set it to cpu"


def test_a_device_string_is_refused() -> None:
    with pytest.raises(TypeError, match="SpanReader takes a haystack ComponentDevice as device, got str"):
        cpu_only_device("SpanReader", "cpu")  # type: ignore[arg-type]


def test_the_device_is_written_only_when_given() -> None:
    assert device_parameter(None) == {}
    assert device_parameter(ComponentDevice.from_str("cpu")) == {"device": {"type": "single", "device": "cpu"}}
