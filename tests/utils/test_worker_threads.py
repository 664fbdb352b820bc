"""``async_twin``: a run_async with run's parameters and output types, run's checks, an awaited body."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from dpr_components.utils.worker_threads import async_twin
from haystack_integrations.components.retrievers.dpr.bm25_retriever import BM25Retriever


class _Doubler:
    def run(self, value: int, times: int | None = None) -> dict[str, Any]:
        """Sync."""
        return {"value": value * self._checked(value, times)}

    def _checked(self, value: int, times: int | None) -> int:
        if value < 0:
            raise ValueError("value must be >= 0")
        return 2 if times is None else times

    async def _run_async(self, times: int) -> dict[str, Any]:
        """Multiplies in the event loop."""
        return {"times": times}

    run_async = async_twin(run, _checked, _run_async)


def test_the_twin_checks_with_defaults_filled_in_and_awaits_the_body() -> None:
    assert asyncio.run(_Doubler().run_async(3)) == {"times": 2}
    assert asyncio.run(_Doubler().run_async(value=3, times=5)) == {"times": 5}
    with pytest.raises(ValueError, match="value must be >= 0"):
        asyncio.run(_Doubler().run_async(-1))


def test_the_twin_has_the_parameters_name_and_docstring_of_an_async_run() -> None:
    assert inspect.signature(_Doubler.run_async) == inspect.signature(_Doubler.run)
    assert inspect.iscoroutinefunction(_Doubler.run_async)
    assert _Doubler.run_async.__name__ == "run_async"
    assert _Doubler.run_async.__doc__ == "Asynchronous version of :meth:`run`. Multiplies in the event loop."


def test_a_component_twin_keeps_haystack_output_types() -> None:
    assert BM25Retriever.run_async._output_types_cache == BM25Retriever.run._output_types_cache  # type: ignore[attr-defined]
