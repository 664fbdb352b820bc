"""Figures for the reports: a matplotlib figure on its own Agg canvas (pyplot's global backend is
left alone), saved as a PNG file atomically."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpr_components.utils.atomic_files import atomic_path
from dpr_components.utils.extras import PLOTS, import_extra

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def new_figure(figsize: tuple[float, float], dpi: float | None = None) -> Figure:
    """An empty figure of ``figsize`` inches (``dpi``: matplotlib's default when not given);
    :class:`~dpr_components.utils.extras.MissingExtraError` without matplotlib (the ``plots`` extra)."""
    import_extra(PLOTS, "a plot")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(figure)
    return figure


def save_png(figure: Figure, path: Path, dpi: float | None = None) -> None:
    """Write ``figure`` to ``path`` as PNG (at ``dpi``, else the figure's own), atomically."""
    with atomic_path(path) as tmp:
        options: dict[str, Any] = {"dpi": dpi} if dpi else {}
        figure.savefig(tmp, format="png", **options)
