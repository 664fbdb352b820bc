"""Questions about a built pipeline's graph."""

from __future__ import annotations

from typing import Any


def leaf_components(pipeline: Any) -> list[str]:
    """Components no other component reads from: the ones whose outputs are the results."""
    graph = pipeline.graph
    return [name for name in graph.nodes if graph.out_degree(name) == 0]
