"""How a component's type path in a pipeline file finds its class: the path it is published
under, the path of its defining module and the old paths of earlier layouts.

A pipeline file names each component by its type path. Haystack's ``Pipeline.from_dict``
imports the module of the path and then looks the full path up in its component registry,
and ``default_from_dict`` refuses data whose ``type`` is not the class's own path. So each path
other than the class's own is registered with a stand-in that imports the class from its home
only when a pipeline names it, and the components' ``from_dict`` accept any of their paths."""

from __future__ import annotations

import importlib
from typing import Any, TypeVar

from haystack import component, default_from_dict
from haystack.core.serialization import generate_qualified_class_name

from dpr_components.legacy.old_paths import LEGACY_TYPE_PATHS

T = TypeVar("T")

# type path of a class's defining module -> its published path (see dpr_components.utils.published);
# these stay loadable for good, with ``allowed_modules=["dpr_components"]``
DEFINITION_PATHS: dict[str, str] = {}


def current_type_path(type_path: str) -> str:
    """The path a class is published under today, for any path it was or is also known by."""
    seen = {type_path}
    while type_path in LEGACY_TYPE_PATHS or type_path in DEFINITION_PATHS:
        type_path = LEGACY_TYPE_PATHS.get(type_path) or DEFINITION_PATHS[type_path]
        if type_path in seen:
            break
        seen.add(type_path)
    return type_path


def register_definition_path(defined: str, published: str) -> None:
    """Keep ``defined`` (``module.Class`` where the class is written) loadable from pipeline files once the
    class is published as ``published``."""
    DEFINITION_PATHS[defined] = published
    if defined != published and defined not in component.registry:
        component.registry[defined] = _stand_in(defined, published)


def _import_type(type_path: str) -> type[Any]:
    module_name, class_name = type_path.rsplit(".", 1)
    return getattr(importlib.import_module(module_name), class_name)


def _stand_in(path: str, current: str) -> type:
    """A registry entry for ``path`` that builds the class published at ``current`` from pipeline data,
    importing it only then."""

    class StandIn:
        @classmethod
        def from_dict(cls, data: dict[str, Any]) -> Any:
            published = current_type_path(current)
            return _import_type(published).from_dict({**data, "type": published})

    StandIn.__name__ = StandIn.__qualname__ = current.rsplit(".", 1)[1]
    StandIn.__doc__ = f"Stands for {current} under the path {path} until the class is imported."
    return StandIn


def register_lazy_class(published: str) -> None:
    """Let ``Pipeline.from_dict`` find the class published at ``published`` in Haystack's component
    registry before its module is imported; importing the class then registers the class itself."""
    if published not in component.registry:
        component.registry[published] = _stand_in(published, published)


def register_legacy_paths(module_name: str) -> None:
    """Register the old type paths of module ``module_name`` in Haystack's component registry,
    without importing the classes they name."""
    for old, current in LEGACY_TYPE_PATHS.items():
        if old.rsplit(".", 1)[0] == module_name and old not in component.registry:
            component.registry[old] = _stand_in(old, current)


def from_dict_any_path(cls: type[T], data: dict[str, Any]) -> T:
    """``default_from_dict`` that also accepts an old type path of ``cls``."""
    current = generate_qualified_class_name(cls)
    if data.get("type") != current and current_type_path(str(data.get("type", ""))) == current:
        data = {**data, "type": current}
    return default_from_dict(cls, data)
