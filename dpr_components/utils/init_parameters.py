"""The init parameters a component keeps as attributes of the same name, for ``default_to_dict``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def init_parameters(owner: Any, names: str) -> dict[str, Any]:
    """``{name: owner.<name>}`` for each of the space-separated ``names``."""
    return {name: getattr(owner, name) for name in names.split()}


def named_values(values: Mapping[str, Any], names: str) -> dict[str, Any]:
    """``{name: values[name]}`` for each of the space-separated ``names``, e.g. of an ``__init__``'s ``locals()``."""
    return {name: values[name] for name in names.split()}
