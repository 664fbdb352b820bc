"""Markdown reports as data and a template: a ``*.md.template`` file with ``$name`` placeholders
(``string.Template``), filled from the values a report writer computes."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from string import Template


def fill_template(path: Path, values: Mapping[str, object]) -> str:
    """The template at ``path`` with every ``$name`` replaced by ``str(values[name])`` (a missing name raises)."""
    return Template(path.read_text(encoding="utf-8")).substitute({key: str(value) for key, value in values.items()})


def sibling_template(module_file: str, name: str) -> Path:
    """The template ``name`` next to the module whose ``__file__`` is ``module_file``."""
    return Path(module_file).with_name(name)
