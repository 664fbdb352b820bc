"""Async twins of synchronous methods, with the method's parameters and Haystack output types: either
the whole method run in a worker thread (``asyncio.to_thread``), so the event loop never waits on it,
or the method's own checks followed by an awaited body (``async_twin``)."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")
Q = TypeVar("Q")


def _named_twin(twin: Any, method: Callable[..., Any], doc: str) -> Any:
    twin.__name__ = f"{method.__name__}_async"
    twin.__qualname__ = f"{method.__qualname__}_async"
    twin.__doc__ = doc
    return twin


def in_worker_thread(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """The async twin of ``method``, with its parameters (and any attributes, such as Haystack's output
    types): it runs the instance's ``method``, looked up by name so that an override runs, in a worker thread."""
    name = method.__name__

    @functools.wraps(method)
    async def twin(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(getattr(self, name), *args, **kwargs)

    return _named_twin(twin, method, f"Asynchronous version of :meth:`{name}`, run in a worker thread.")


def async_twin(
    method: Callable[Concatenate[S, P], R],
    prepare: Callable[..., Q],
    body: Callable[[S, Q], Awaitable[R]],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """The async twin of ``method``, with its parameters (and any attributes, such as Haystack's output
    types): the call's arguments, defaults filled in, go in ``method``'s order to ``prepare(self, ...)``,
    which checks them as ``method`` does, and ``body(self, prepared)`` is awaited. ``body``'s docstring
    says what the twin does asynchronously."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    async def twin(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        call = signature.bind(self, *args, **kwargs)
        call.apply_defaults()
        return await body(self, prepare(*call.args, **call.kwargs))

    return _named_twin(twin, method, f"Asynchronous version of :meth:`{method.__name__}`. {body.__doc__}")
