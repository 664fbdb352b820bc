"""Load YAML pipeline files with bounded cost.

``yaml.safe_load`` builds no objects but plain data, yet aliases make a small file expand into
a huge structure: nine nested levels of nine aliases ("billion laughs") is a few hundred bytes
that reads as 387 million strings to anything walking the result. This loader measures the
size of the document *with aliases expanded* as it is composed and refuses a document beyond
``MAX_EXPANDED_NODES`` nodes, ``MAX_DEPTH`` levels of nesting, or ``MAX_FILE_BYTES`` bytes. A
plain alias of a store definition (``&store`` ... ``*store``) costs only its own size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

MAX_FILE_BYTES = 1_000_000
MAX_EXPANDED_NODES = 100_000
MAX_DEPTH = 64


class YamlFileError(ValueError):
    """A YAML file is missing, unreadable, not valid YAML, or larger, deeper or more aliased than allowed."""


class _BoundedLoader(yaml.SafeLoader):
    """A SafeLoader that refuses documents whose alias-expanded size or depth is out of bounds."""

    def compose_document(self) -> Node:
        root = super().compose_document()
        _check_expanded_size(root)
        return root

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise YamlFileError(f"line {mark.line + 1}: nested more than {MAX_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _check_expanded_size(root: Node) -> None:
    """Count nodes as if every alias were copied out; an alias of a node that contains itself is refused."""
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()

    def size(node: Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in in_progress:
            raise YamlFileError(f"line {node.start_mark.line + 1}: an alias refers to a structure that contains it")
        in_progress.add(key)
        total = 1
        if isinstance(node, SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        in_progress.discard(key)
        if total > MAX_EXPANDED_NODES:
            raise YamlFileError(
                f"line {node.start_mark.line + 1}: aliases expand the document beyond {MAX_EXPANDED_NODES:,} values"
            )
        sizes[key] = total
        return total

    if root is not None:
        size(root)


def load_yaml_text(text: str) -> Any:
    """Parse one YAML document with the bounds above."""
    if len(text.encode("utf-8")) > MAX_FILE_BYTES:
        raise YamlFileError(f"larger than {MAX_FILE_BYTES:,} bytes")
    return yaml.load(text, Loader=_BoundedLoader)  # safe: a SafeLoader subclass


def read_yaml_file(path: str | Path) -> Any:
    """Read and parse a YAML file; every problem is a ``ValueError`` naming the file."""
    path = Path(path)
    if path.is_dir():
        raise YamlFileError(f"{path} is a directory, not a YAML file")
    if not path.exists():
        raise YamlFileError(f"{path} does not exist")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise YamlFileError(f"{path}: {size:,} bytes; a pipeline file may have at most {MAX_FILE_BYTES:,}")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise YamlFileError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    try:
        return load_yaml_text(text)
    except YamlFileError as error:
        raise YamlFileError(f"{path}: {error}") from None
    except yaml.YAMLError as error:
        raise YamlFileError(f"{path}: not valid YAML: {' '.join(str(error).split())}") from None
    except ValueError as error:  # a scalar Python refuses to convert, e.g. an integer of more than 4,300 digits
        reason = " ".join(str(error).split(";")[0].split())
        raise YamlFileError(f"{path}: a value cannot be read ({reason})") from None
