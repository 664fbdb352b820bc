"""Async twins of synchronous methods: the method run in a worker thread (``asyncio.to_thread``),
so the event loop never waits on it."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


def in_worker_thread(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """The async twin of ``method``, with its parameters (and any attributes, such as Haystack's output
    types): it runs the instance's ``method``, looked up by name so that an override runs, in a worker thread."""
    name = method.__name__

    @functools.wraps(method)
    async def twin(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(getattr(self, name), *args, **kwargs)

    twin.__name__ = f"{name}_async"
    twin.__qualname__ = f"{method.__qualname__}_async"
    twin.__doc__ = f"Asynchronous version of :meth:`{name}`, run in a worker thread."
    return twin
