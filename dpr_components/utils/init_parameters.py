"""The init parameters a component keeps as attributes of the same name, for ``default_to_dict``."""

from __future__ import annotations

from typing import Any


def init_parameters(owner: Any, names: str) -> dict[str, Any]:
    """``{name: owner.<name>}`` for each of the space-separated ``names``."""
    return {name: getattr(owner, name) for name in names.split()}
