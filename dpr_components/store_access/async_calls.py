"""Calling a document store from async code without blocking the event loop: the store's
``<method>_async`` when it has one, else its ``<method>`` in a worker thread."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any


def async_method(store: Any, name: str) -> Any:
    """``store.<name>_async`` if the store defines it as a coroutine function, else None."""
    method = getattr(store, f"{name}_async", None)
    return method if callable(method) and inspect.iscoroutinefunction(method) else None


async def call_store(store: Any, name: str, /, *args: Any, **kwargs: Any) -> Any:
    """``await store.<name>_async(...)``, or ``store.<name>(...)`` run in a worker thread."""
    method = async_method(store, name)
    if method is not None:
        return await method(*args, **kwargs)
    sync_method = getattr(store, name, None)
    if not callable(sync_method):
        raise ValueError(f"document store {type(store).__name__} has no {name} method")
    return await asyncio.to_thread(sync_method, *args, **kwargs)
