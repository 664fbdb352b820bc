"""The server's release of freed memory: the setting, and the call where glibc has it."""

from __future__ import annotations

import sys

import pytest

from dpr_components.serving import allocator


def test_release_every_ten_seconds_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(allocator.RELEASE_SECONDS_ENV, raising=False)
    assert allocator.release_seconds() == 10


def test_zero_turns_the_release_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(allocator.RELEASE_SECONDS_ENV, "0")
    assert allocator.release_seconds() == 0
    assert allocator.start_memory_release() is None


@pytest.mark.parametrize("value", ["-1", "ten", "1.5", "100000"])
def test_a_bad_setting_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(allocator.RELEASE_SECONDS_ENV, value)
    with pytest.raises(ValueError, match=r"^DPR_RELEASE_MEMORY_SECONDS=.*from 0 to 86,400") as raised:
        allocator.release_seconds()
    assert "\n" not in str(raised.value)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's")
def test_the_release_runs_until_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(allocator, "malloc_trim", lambda: lambda: calls.append(1))
    stop = allocator.start_memory_release(every=1)
    assert stop is not None
    for _ in range(50):
        if calls:
            break
        stop.wait(0.1)
    stop.set()
    assert calls


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's")
def test_glibc_trim_is_found_and_runs() -> None:
    trim = allocator.malloc_trim()
    assert trim is not None
    assert trim() in (0, 1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's")
def test_the_thresholds_are_held_where_the_user_set_none() -> None:
    assert allocator.hold_malloc_thresholds(environ={}) is True


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MALLOC_MMAP_THRESHOLD_", "65536"),
        ("MALLOC_TRIM_THRESHOLD_", "65536"),
        ("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=512:glibc.malloc.mmap_threshold=65536"),
    ],
)
def test_the_users_own_glibc_settings_win(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    calls: list[tuple[int, int]] = []

    def mallopt(parameter: int, value: int) -> int:
        calls.append((parameter, value))
        return 1

    monkeypatch.setattr(allocator, "_libc_function", lambda _name: mallopt)
    assert allocator.hold_malloc_thresholds(environ={}) is True
    assert len(calls) == 2
    calls.clear()
    assert allocator.hold_malloc_thresholds(environ={name: value}) is False
    assert calls == []
    assert allocator.hold_malloc_thresholds(environ={"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=512"}) is True


def test_no_mallopt_leaves_the_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator, "_libc_function", lambda _name: None)
    assert allocator.hold_malloc_thresholds(environ={}) is False


def test_zero_leaves_the_thresholds_to_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator, "_libc_function", lambda _name: pytest.fail("mallopt looked up"))
    assert allocator.hold_malloc_thresholds(environ={allocator.HOLD_THRESHOLDS_ENV: "0"}) is False
    with pytest.raises(ValueError, match=r"^DPR_HOLD_MALLOC_THRESHOLDS=2.*from 0 to 1"):
        allocator.hold_malloc_thresholds(environ={allocator.HOLD_THRESHOLDS_ENV: "2"})
