"""The one plotting style of the paper's figures: medians with quantile bands, saved headless.

Every experiment draws through these helpers, so a figure's look (and the statement of its
band quantiles) is decided once.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["new_figure", "plot_band", "save_figure"]


def new_figure(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """``matplotlib.pyplot.subplots`` on the headless Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)


def plot_band(axis: Any, values: Any, label: str, quantiles: tuple[float, float] = (0.1, 0.9),
              transform: Any = None, **style: Any) -> None:
    """Draws the median of grouped ``values`` (a ``pandas`` ``SeriesGroupBy`` over the x
    axis) as a line with a shaded band between the two ``quantiles``.

    Args:
        axis: The matplotlib axis.
        values: Per-x groups of values, e.g. ``frame.groupby("t")["mean"]``.
        label: Legend label of the line.
        quantiles: Lower and upper quantile of the band.
        transform: Applied to the median and both quantiles before drawing (e.g. ``np.log``).
        **style: Line style (``color``, ``linestyle``, ...), shared by the band's colour.
    """
    median: pd.Series = values.median()
    low, high = values.quantile(quantiles[0]), values.quantile(quantiles[1])
    if transform is not None:
        median, low, high = transform(median), transform(low), transform(high)
    (line,) = axis.plot(median.index, np.asarray(median), label=label, **style)
    axis.fill_between(median.index, np.asarray(low), np.asarray(high), alpha=0.2,
                      color=line.get_color())


def save_figure(figure: Any, path: str | os.PathLike[str] | None, dpi: int = 120) -> Any:
    """Lays ``figure`` out and writes it to ``path`` (if given); returns the figure."""
    figure.tight_layout()
    if path is not None:
        figure.savefig(path, dpi=dpi)
    return figure
