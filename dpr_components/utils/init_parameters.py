"""The init parameters a component keeps as attributes of the same name, for ``default_to_dict``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Self

from haystack import default_from_dict, default_to_dict


def init_parameters(owner: Any, names: str) -> dict[str, Any]:
    """``{name: owner.<name>}`` for each of the space-separated ``names``."""
    return {name: getattr(owner, name) for name in names.split()}


def named_values(values: Mapping[str, Any], names: str) -> dict[str, Any]:
    """``{name: values[name]}`` for each of the space-separated ``names``, e.g. of an ``__init__``'s ``locals()``."""
    return {name: values[name] for name in names.split()}


class InitParametersDict:
    """Base of components whose pipeline data is their init parameters ``INIT_PARAMETERS`` (space-separated),
    each kept as an attribute of the same name."""

    INIT_PARAMETERS: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, **init_parameters(self, self.INIT_PARAMETERS))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return default_from_dict(cls, data)
