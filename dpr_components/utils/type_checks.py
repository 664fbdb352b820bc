"""Check values from YAML, ``--set``, ``--input`` and JSON files against a parameter's type hint.

Haystack passes these values to a component unchecked, so a wrong type surfaces later as a
traceback from deep inside a library, or not at all. The checker understands the hints that
configuration values have: ``int``, ``float``, ``bool``, ``str``, ``None``, ``Literal``,
``Optional``/unions, ``list``/``Sequence`` and ``dict``/``Mapping``. Other hints (document
stores, enums, secrets: objects that ``from_dict`` builds from their serialised form) are
left to the component unless ``check_classes`` asks for an ``isinstance`` check."""

from __future__ import annotations

import collections.abc
import math
import types
import typing
from typing import Any, Literal, Union

from dpr_components.utils.validation import short_repr

_LISTS = (list, collections.abc.Sequence, collections.abc.Iterable, collections.abc.MutableSequence)
_DICTS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


class Unchecked(Exception):
    """The hint is not one the checker understands; the value is left to the component."""


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if hint is Any:
        return "anything"
    if hint in (None, type(None)):
        return "null"
    if hint is bool:
        return "true or false"
    if hint is int:
        return "an integer"
    if hint is float:
        return "a finite number"
    if hint is str:
        return "text"
    if origin is Literal:
        return "one of " + ", ".join(repr(v) for v in typing.get_args(hint))
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(arm) for arm in typing.get_args(hint))
    if hint in _LISTS or origin in _LISTS:
        return "a list"
    if hint in _DICTS or origin in _DICTS:
        return "a mapping"
    if isinstance(hint, type):
        return f"a {hint.__name__}"
    return str(hint)


def _fits(value: Any, hint: Any, check_classes: bool) -> bool:
    """Whether ``value`` fits ``hint``; raises ``Unchecked`` for hints outside the checker's reach."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any or isinstance(hint, typing.TypeVar):
        return True
    if hint in (None, type(None)):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if hint is str:
        return isinstance(value, str)
    if origin is Literal:
        return any(value == option and type(value) is type(option) for option in args)
    if origin in (Union, types.UnionType):
        results = []
        for arm in args:
            try:
                results.append(_fits(value, arm, check_classes))
            except Unchecked:
                return True  # an arm the checker cannot judge might accept the value
        return any(results)
    if hint in _LISTS or origin in _LISTS:
        if not isinstance(value, (list, tuple)):
            return False
        return not args or all(_fits(item, args[0], check_classes) for item in value)
    if hint in _DICTS or origin in _DICTS:
        if not isinstance(value, dict):
            return False
        return len(args) != 2 or all(_fits(item, args[1], check_classes) for item in value.values())
    if check_classes and isinstance(hint, type):
        return isinstance(value, hint)
    raise Unchecked(hint)


def type_mismatch(value: Any, hint: Any, check_classes: bool = False) -> str | None:
    """``None`` when ``value`` fits ``hint`` (or the hint cannot be checked), else ``"expected X, got Y"``."""
    try:
        if _fits(value, hint, check_classes):
            return None
    except Unchecked:
        return None
    return f"expected {_describe(hint)}, got {short_repr(value)}"


def init_hints(cls: type[Any]) -> tuple[dict[str, Any], set[str], bool]:
    """Type hints of ``cls.__init__``, its parameter names, and whether it takes ``**kwargs``."""
    import inspect

    signature = inspect.signature(cls.__init__)
    names = {name for name in signature.parameters if name != "self"}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # noqa: BLE001 - hints that do not resolve (forward references): check names only
        hints = {}
    hints.pop("return", None)
    return hints, names, takes_any
