"""Optional dependencies: the modules only some paths of the package need, which extra of the package
installs each, and the one line that says so when one is missing.

The default pipelines (index, search, QA) need none of them; reading parquet, arrow or Hugging Face
datasets needs ``datasets`` (``[datasets]``), the reports' plots ``matplotlib`` (``[plots]``), the
Elasticsearch pipelines ``elasticsearch-haystack`` (``[elasticsearch]``)."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class Extra:
    """An optional module: the distribution that brings it and the package's extra that installs that."""

    module: str
    distribution: str
    extra: str


DATASETS = Extra("datasets", "datasets", "datasets")
DATASETS_READS = "parquet, arrow, a folder or a Hugging Face hub dataset"
PLOTS = Extra("matplotlib", "matplotlib", "plots")
ELASTICSEARCH = Extra("haystack_integrations.document_stores.elasticsearch", "elasticsearch-haystack", "elasticsearch")
# pipeline files' types that live in an optional distribution, by the module prefix of their type path
PIPELINE_TYPE_EXTRAS = (
    ELASTICSEARCH,
    Extra("haystack_integrations.components.retrievers.elasticsearch", "elasticsearch-haystack", "elasticsearch"),
)
# Haystack's converters of a folder's files (pipelines/index_files.yml) ship with Haystack but import their
# libraries when built: each type path with the modules it needs, all installed by the [files] extra
CONVERTER_EXTRAS = {
    "haystack.components.converters.pypdf.PyPDFToDocument": (Extra("pypdf", "pypdf", "files"),),
    "haystack.components.converters.docx.DOCXToDocument": (Extra("docx", "python-docx", "files"),),
    "haystack.components.converters.html.HTMLToDocument": (Extra("trafilatura", "trafilatura", "files"),),
    "haystack.components.converters.markdown.MarkdownToDocument": (
        Extra("markdown_it", "markdown-it-py", "files"),
        Extra("mdit_plain", "mdit_plain", "files"),
    ),
}


class MissingExtraError(ImportError, ValueError):
    """A module of one of the package's extras is not installed; the message names the extra to install.
    A ``ValueError`` too, so the command line reports it as one line."""


def missing_extra_message(extra: Extra, purpose: str) -> str:
    """``{purpose} needs {distribution}: pip install 'dpr-components[{extra}]'``."""
    return f"{purpose} needs {extra.distribution}: pip install 'dpr-components[{extra.extra}]'"


def is_installed(extra: Extra) -> bool:
    """Whether ``extra``'s module can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(extra.module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module without a spec
        return False


def import_extra(extra: Extra, purpose: str) -> ModuleType:
    """``extra``'s module, imported; :class:`MissingExtraError` naming the extra when it (or a module it
    needs) is not installed."""
    try:
        return importlib.import_module(extra.module)
    except ModuleNotFoundError as error:
        raise MissingExtraError(missing_extra_message(extra, purpose), name=error.name) from None


def _typed_entries(node: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every ``type`` in a pipeline specification (nested objects such as stores included), with where it is."""
    if isinstance(node, dict):
        if isinstance(node.get("type"), str):
            yield where, node["type"]
        for key, value in node.items():
            yield from _typed_entries(value, f"{where}.{key}" if where else str(key))
    elif isinstance(node, list):
        for value in node:
            yield from _typed_entries(value, where)


def check_pipeline_extras(components: dict[str, Any], source: str) -> None:
    """:class:`MissingExtraError` for the first component of a pipeline file whose class comes with an
    extra that is not installed, naming the component, the class and the ``pip install`` that adds it."""
    for name, data in components.items():
        for where, type_name in _typed_entries(data, str(name)):
            needed = [e for e in PIPELINE_TYPE_EXTRAS if type_name == e.module or type_name.startswith(f"{e.module}.")]
            for extra in [*needed, *CONVERTER_EXTRAS.get(type_name, ())]:
                if not is_installed(extra):
                    parameter = where.replace(".init_parameters.", ".")
                    purpose = f"{source}: {parameter} ({type_name.rsplit('.', 1)[-1]})"
                    raise MissingExtraError(missing_extra_message(extra, purpose))
