"""Package faces whose names load on first use."""

from __future__ import annotations

import sys

from lazy_imports import LazyImporter


def make_lazy(name: str, module_file: str, import_structure: dict[str, list[str]], legacy_paths: bool = False) -> None:
    """Replace package ``name`` by a face that imports each name of ``import_structure`` (module -> names)
    on first use; ``legacy_paths`` also keeps the package's old ``<package>.<Class>`` type paths of
    pipeline files loadable (see :mod:`dpr_components.utils.type_paths`)."""
    sys.modules[name] = LazyImporter(name=name, module_file=module_file, import_structure=import_structure)
    if legacy_paths:
        from dpr_components.utils.type_paths import register_legacy_paths

        register_legacy_paths(name)
