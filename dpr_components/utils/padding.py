"""How far a batch of token rows is padded: to its longest row rounded up to a multiple of
:data:`LENGTH_MULTIPLE`, so that the models meet few distinct input shapes.

OpenVINO and torch keep memory for each distinct input shape they have run (kernels and buffers made
for it), which a long-running server never gives back: every new (rows, length) pair grows it by about
1.5 MB for 10 rows of MiniLM (docs/benchmarks/load/shape_memory.md). Padding to a multiple of 8 costs at
most 7 masked tokens a row and leaves an eighth as many lengths to meet."""

from __future__ import annotations

LENGTH_MULTIPLE = 8


def padded_length(longest: int, cap: int | None) -> int:
    """``longest`` rounded up to a multiple of :data:`LENGTH_MULTIPLE` (read at each call) but not above
    ``cap`` (the rows' maximum length, which the model accepts); ``longest`` itself when ``cap`` is None."""
    if cap is None or longest >= cap:
        return longest
    return min(-(-longest // LENGTH_MULTIPLE) * LENGTH_MULTIPLE, cap)
