"""The one plotting style of the paper's figures: medians with quantile bands, saved headless.

Every experiment draws through these helpers, so a figure's look is decided once: the style
(:data:`STYLE`), the median-and-band lines (:func:`plot_band`), one legend per figure outside
the data (:func:`figure_legend`), a caption stating the bands and the abbreviations
(:func:`add_caption`, :func:`band_note`) and saving (:func:`save_figure`). Method names,
colours and line styles come from :mod:`bam_rl.harness.naming`.
"""

from __future__ import annotations

import contextlib
import os
import textwrap
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "STYLE",
    "add_caption",
    "band_note",
    "figure_legend",
    "new_figure",
    "plot_band",
    "plot_points",
    "save_figure",
]

#: Matplotlib settings of every figure.
STYLE: dict[str, Any] = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "savefig.facecolor": "white",
    "figure.facecolor": "white",
}
#: Opacity of a quantile band.
BAND_ALPHA = 0.18


def new_figure(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """``matplotlib.pyplot.subplots`` on the headless Agg backend, in :data:`STYLE`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings: Any = plt.rcParams  # typed with literal keys only
    settings.update(STYLE)
    return plt.subplots(*args, **kwargs)


def band_note(quantiles: tuple[float, float], over: str = "seeds") -> str:
    """``"lines: medians over seeds; shaded bands: 10–90 % quantiles"``."""
    low, high = (round(100 * q) for q in quantiles)
    return f"lines: medians over {over}; shaded bands: {low}–{high} % quantiles"


def plot_band(
    axis: Any,
    values: Any,
    label: str,
    quantiles: tuple[float, float] = (0.1, 0.9),
    transform: Any = None,
    band_alpha: float = BAND_ALPHA,
    **style: Any,
) -> Any:
    """Draws the median of grouped ``values`` (a ``pandas`` ``SeriesGroupBy`` over the x
    axis) as a line with a shaded band between the two ``quantiles``.

    Args:
        axis: The matplotlib axis.
        values: Per-x groups of values, e.g. ``frame.groupby("t")["mean"]``.
        label: Legend label of the line.
        quantiles: Lower and upper quantile of the band.
        transform: Applied to the median and both quantiles before drawing (e.g. ``np.log``).
        band_alpha: Opacity of the band.
        **style: Line style (``color``, ``linestyle``, ``zorder``, ...); the band takes the
            line's colour and sits just below it.

    Returns:
        The line.
    """
    median: pd.Series = values.median()
    low, high = values.quantile(quantiles[0]), values.quantile(quantiles[1])
    if transform is not None:
        median, low, high = transform(median), transform(low), transform(high)
    (line,) = axis.plot(median.index, np.asarray(median), label=label, **style)
    axis.fill_between(
        median.index,
        np.asarray(low),
        np.asarray(high),
        alpha=band_alpha,
        color=line.get_color(),
        linewidth=0,
        zorder=line.get_zorder() - 0.5,
    )
    return line


def plot_points(
    axis: Any,
    position: float,
    values: Any,
    color: str,
    marker: str = "o",
    summary_label: str | None = None,
) -> None:
    """One method's per-seed values as jittered dots at ``position`` with their mean ± sd
    (black, just right of the dots)."""
    values = np.asarray(values, dtype=np.float64)
    jitter = np.linspace(-0.15, 0.15, values.size) if values.size > 1 else np.zeros(1)
    axis.scatter(position + jitter, values, s=16, alpha=0.7, color=color, marker=marker, zorder=3)
    sd = values.std(ddof=1) if values.size > 1 else 0.0
    axis.errorbar(
        position + 0.3,
        values.mean(),
        yerr=sd,
        fmt="o",
        color="black",
        capsize=4,
        label=summary_label,
        zorder=4,
    )


def figure_legend(
    figure: Any,
    axes: Sequence[Any] | Any,
    loc: str = "right",
    ncol: int | None = None,
    title: str | None = None,
) -> Any:
    """One legend for the whole figure, outside the data: the unique labelled handles of all
    ``axes``, right of the panels (``loc="right"``) or below them (``loc="below"``)."""
    handles: list[Any] = []
    labels: list[str] = []
    for axis in np.atleast_1d(np.asarray(axes, dtype=object)).ravel():
        for handle, text in zip(*axis.get_legend_handles_labels(), strict=True):
            if text not in labels and not text.startswith("_"):
                handles.append(handle)
                labels.append(text)
    if loc == "right":
        return figure.legend(
            handles,
            labels,
            loc="center left",
            bbox_to_anchor=(1.0, 0.5),
            ncol=ncol or 1,
            title=title,
            handlelength=3.2,
        )
    if loc == "below":
        return figure.legend(
            handles,
            labels,
            loc="upper center",
            bbox_to_anchor=(0.5, 0.0),
            ncol=ncol or min(len(labels), 3),
            title=title,
            handlelength=3.2,
        )
    raise ValueError(f"loc must be 'right' or 'below', got {loc!r}")


def add_caption(figure: Any, text: str, width: int = 150) -> Any:
    """A caption (wrapped at ``width`` characters) under the figure: what the lines and
    bands are, and what the abbreviations stand for."""
    wrapped = "\n".join(textwrap.wrap(text, width))
    return figure.text(
        0.01, -0.01, wrapped, ha="left", va="top", fontsize=8.5, color="0.25", wrap=False
    )


#: What every output of a ``--quick`` run says about itself.
SMOKE_NOTE = (
    "smoke test (--quick): a short run that checks everything runs; not the experiment's numbers"
)
_SMOKE: list[bool] = []


@contextlib.contextmanager
def smoke_test(active: bool = True) -> Iterator[None]:
    """Inside the block (when ``active``), :func:`save_figure` stamps :data:`SMOKE_NOTE` on
    every figure and :func:`mark_smoke_test` adds it to summaries."""
    _SMOKE.append(bool(active))
    try:
        yield
    finally:
        _SMOKE.pop()


def in_smoke_test() -> bool:
    """Whether a :func:`smoke_test` block is active."""
    return bool(_SMOKE) and _SMOKE[-1]


def mark_smoke_test(summary: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with a ``note`` column holding :data:`SMOKE_NOTE` inside a smoke test (as
    it is otherwise: paper-scale summaries are unchanged)."""
    if not in_smoke_test():
        return summary
    return summary.assign(note=SMOKE_NOTE)


def count_text(count: int, noun: str) -> str:
    """``"1 seed"``, ``"2 seeds"``."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


def save_figure(figure: Any, path: str | os.PathLike[str] | None, dpi: int = 120) -> Any:
    """Lays ``figure`` out and writes it to ``path`` (if given), including legends and
    captions outside the axes; returns the figure. Inside :func:`smoke_test` the figure
    carries :data:`SMOKE_NOTE` above everything else."""
    if in_smoke_test():
        figure.text(
            0.5, 1.0, SMOKE_NOTE.upper(), ha="center", va="bottom", color="#b00020",
            fontsize=11, fontweight="bold", transform=figure.transFigure,
        )  # fmt: skip
    figure.tight_layout()
    if path is not None:
        figure.savefig(path, dpi=dpi, bbox_inches="tight", pad_inches=0.15)
    return figure
