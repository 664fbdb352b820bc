"""How far a batch of token rows is padded: to its longest row rounded up to a multiple of
:data:`LENGTH_MULTIPLE`, so that the models meet few distinct input shapes.

OpenVINO and torch keep memory for each distinct input shape they have run (kernels and buffers made
for it), which a long-running server never gives back: every new (rows, length) pair grows it by about
1.5 MB for 10 rows of MiniLM (docs/benchmarks/load/shape_memory.md). Padding to a multiple of 8 costs at
most 7 masked tokens a row and leaves an eighth as many lengths to meet."""

from __future__ import annotations

from collections.abc import Sequence

LENGTH_MULTIPLE = 8


def padded_length(longest: int, cap: int | None) -> int:
    """``longest`` rounded up to a multiple of :data:`LENGTH_MULTIPLE` (read at each call) but not above
    ``cap`` (the rows' maximum length, which the model accepts); ``longest`` itself when ``cap`` is None."""
    if cap is None or longest >= cap:
        return longest
    return min(-(-longest // LENGTH_MULTIPLE) * LENGTH_MULTIPLE, cap)


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices of rows of these ``lengths`` in batches of at most ``batch_size``, shortest rows first and the
    batches as even in size as they can be: each batch is padded only to its own longest row."""
    if not lengths:
        return []
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    count = -(-len(order) // batch_size)
    size, extra = divmod(len(order), count)
    bounds = [i * size + min(i, extra) for i in range(count + 1)]
    return [order[bounds[i] : bounds[i + 1]] for i in range(count)]
