"""The one plotting style of the paper's figures: medians with quantile bands, saved headless.

Every experiment draws through these helpers, so a figure's look is decided once: the style
(:data:`STYLE`), the median-and-band lines (:func:`plot_band`), one legend per figure outside
the data (:func:`figure_legend`), a caption stating the bands and the abbreviations
(:func:`add_caption`, :func:`band_note`) and saving (:func:`save_figure`). Method names,
colours and line styles come from :mod:`bam_rl.harness.naming`.

A figure with many methods highlights the few its text discusses
(:func:`plot_highlighted`): those get strong colours, bands and labels at their line ends
(:func:`label_line_ends`); the others are thin grey lines named together in one legend row
below the panels (:func:`context_legend`), clear of the title and the smoke-test banner.
"""

from __future__ import annotations

import contextlib
import os
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bam_rl.harness.files import write_frame
from bam_rl.harness.naming import PALETTE

__all__ = [
    "STYLE",
    "add_caption",
    "band_note",
    "context_legend",
    "figure_legend",
    "highlight_styles",
    "label_line_ends",
    "new_figure",
    "plot_band",
    "plot_highlighted",
    "plot_points",
    "save_figure",
    "write_summary",
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
    # where each ``loc`` anchors the legend, and its columns unless ``ncol`` is given
    if loc == "right":
        anchor, corner, columns = (1.0, 0.5), "center left", 1
    elif loc == "below":
        anchor, corner, columns = (0.5, 0.0), "upper center", min(len(labels), 3)
    else:
        raise ValueError(f"loc must be 'right' or 'below', got {loc!r}")
    return figure.legend(
        handles,
        labels,
        loc=corner,
        bbox_to_anchor=anchor,
        ncol=ncol or columns,
        title=title,
        handlelength=3.2,
    )


def add_caption(figure: Any, text: str, width: int = 150, below: Any = None) -> Any:
    """A caption (wrapped at ``width`` characters) under the figure: what the lines and
    bands are, and what the abbreviations stand for. ``below``: an artist placed under the
    panels (the legend row of :func:`context_legend`) the caption goes beneath."""
    wrapped = "\n".join(textwrap.wrap(text, width))
    top = -0.01
    if below is not None:
        extent = below.get_window_extent(figure.canvas.get_renderer())
        top = figure.transFigure.inverted().transform((0.0, extent.y0))[1] - 0.01
    return figure.text(
        0.01, top, wrapped, ha="left", va="top", fontsize=8.5, color="0.25", wrap=False
    )


#: Colours of the highlighted methods, in the order :func:`highlight_styles` hands them out
#: (Okabe–Ito: strong and colour-blind safe; yellow is left out, too light on white).
HIGHLIGHT_COLORS: tuple[str, ...] = tuple(
    PALETTE[name] for name in ("vermilion", "blue", "green", "black", "purple", "orange", "sky")
)
#: The look of every method a figure does not highlight: thin, light grey, underneath.
CONTEXT_STYLE: dict[str, Any] = {"color": "#b4b4b4", "linewidth": 0.8, "zorder": 1.0}
#: Width and stacking of a highlighted line.
HIGHLIGHT_WIDTH = 2.0


def highlight_styles(
    keys: Sequence[str],
    highlighted: Sequence[str],
    colors: Mapping[str, str] | None = None,
    linestyles: Mapping[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """``Axes.plot`` keyword arguments for each of ``keys``: the ``highlighted`` ones a strong
    colour each (``colors``, else :data:`HIGHLIGHT_COLORS` in order) and a thick line
    (``linestyles``: their dash patterns, solid by default); every other one
    :data:`CONTEXT_STYLE`.

    Raises:
        ValueError: If ``highlighted`` repeats a key or has more keys than there are colours.
    """
    highlighted = list(highlighted)
    if len(set(highlighted)) != len(highlighted):
        raise ValueError(f"highlighted must not repeat a method, got {highlighted}")
    colors = dict(colors or {})
    spare = [c for c in HIGHLIGHT_COLORS if c not in colors.values()]
    needed = [k for k in highlighted if k not in colors]
    if len(needed) > len(spare):
        raise ValueError(
            f"at most {len(HIGHLIGHT_COLORS)} methods can be highlighted (strong colours run "
            f"out beyond that), got {len(highlighted)}: {highlighted}"
        )
    colors |= dict(zip(needed, spare, strict=False))
    styles: dict[str, dict[str, Any]] = {}
    for key in keys:
        if key in highlighted:
            styles[key] = {
                "color": colors[key],
                "linestyle": (linestyles or {}).get(key, "-"),
                "linewidth": HIGHLIGHT_WIDTH,
                "zorder": 3.0 + 0.01 * highlighted.index(key),
            }
        else:
            styles[key] = dict(CONTEXT_STYLE, linestyle="-")
    return styles


def plot_highlighted(
    axis: Any,
    curves: Mapping[str, tuple[Any, ...]],
    highlighted: Sequence[str],
    labels: Mapping[str, str] | None = None,
    styles: Mapping[str, Mapping[str, Any]] | None = None,
    band_alpha: float = BAND_ALPHA,
) -> dict[str, Any]:
    """Draws many methods' curves, the ``highlighted`` ones strong and on top.

    Args:
        axis: The matplotlib axis.
        curves: ``key -> (x, y)`` or ``key -> (x, y, low, high)``; a highlighted method's
            band is drawn between ``low`` and ``high`` (the others get none: their bands
            would only fog the highlighted ones).
        highlighted: The methods the text discusses (in the order their colours are handed
            out); keys absent from ``curves`` are skipped.
        labels: ``key -> label`` (default: the key); the label of each line.
        styles: ``key -> Axes.plot keyword arguments`` (default: :func:`highlight_styles`
            over ``curves``, ``highlighted``); pass one table to keep colours equal across
            panels that miss some methods.
        band_alpha: Opacity of a band.

    Returns:
        ``key -> Line2D``, every drawn line (each line's ``gid`` is its key). Label the
        highlighted ends with :func:`label_line_ends` once the axis limits are final, and
        name the others with :func:`context_legend`.
    """
    labels = labels or {}
    styles = styles or highlight_styles(list(curves), highlighted)
    order = [k for k in curves if k not in highlighted] + [k for k in highlighted if k in curves]
    lines: dict[str, Any] = {}
    for key in order:
        x, y, *band = curves[key]
        (line,) = axis.plot(np.asarray(x), np.asarray(y), label=labels.get(key, key), **styles[key])
        line.set_gid(key)
        lines[key] = line
        if key in highlighted and len(band) == 2:
            axis.fill_between(
                np.asarray(x),
                np.asarray(band[0]),
                np.asarray(band[1]),
                color=line.get_color(),
                alpha=band_alpha,
                linewidth=0,
                zorder=line.get_zorder() - 0.5,
            )
    return lines


def label_line_ends(
    axis: Any, lines: Mapping[str, Any], fontsize: float = 8.5, spacing: float = 1.3
) -> list[Any]:
    """Writes each ``label -> line`` of ``lines`` just right of ``axis``, at the height its line
    ends, in the line's colour; labels that would touch are pushed apart (``spacing`` line
    heights between centres) and kept within the axis height. Call it once the axis limits
    are final (after ``set_yscale``, ``set_ylim``). Returns the texts."""
    axis.get_xlim(), axis.get_ylim()  # settle a pending autoscale before reading positions
    to_axes = axis.transScale + axis.transLimits  # data -> axes fraction (log scales too)
    ends = []
    for text, line in lines.items():
        x, y = (np.asarray(v, dtype=np.float64) for v in line.get_data())
        keep = np.isfinite(x) & np.isfinite(y)
        if axis.get_yscale() == "log":
            keep &= y > 0
        if keep.any():
            ends.append([float(to_axes.transform((x[keep][-1], y[keep][-1]))[1]), text, line])
    if not ends:
        return []
    height_points = axis.get_window_extent().height * 72.0 / axis.figure.dpi
    gap = spacing * fontsize / max(height_points, 1.0)
    ends.sort(key=lambda end: end[0])
    positions = np.clip([end[0] for end in ends], 0.0, 1.0)
    for i in range(1, len(positions)):
        positions[i] = max(positions[i], positions[i - 1] + gap)
    if positions[-1] > 1.0:
        positions[-1] = 1.0
        for i in range(len(positions) - 2, -1, -1):
            positions[i] = min(positions[i], positions[i + 1] - gap)
    return [
        axis.annotate(
            text,
            xy=(1.0, position),
            xycoords="axes fraction",
            xytext=(4, 0),
            textcoords="offset points",
            ha="left",
            va="center",
            fontsize=fontsize,
            color=line.get_color(),
            fontweight="bold",
            annotation_clip=False,
        )
        for position, (_, text, line) in zip(positions, ends, strict=True)
    ]


def context_legend(
    figure: Any, labels: Sequence[str], title: str = "grey", fontsize: float = 8.5
) -> Any:
    """One legend row under the panels naming every method drawn in :data:`CONTEXT_STYLE`:
    a grey line and ``"<title>: label; label; …"``, wrapped to the figure's width. Under
    the panels, it never meets the title or the smoke-test banner above them. Returns the
    legend (``None`` when ``labels`` is empty); pass it to :func:`add_caption` as ``below``."""
    if not labels:
        return None
    from matplotlib.lines import Line2D

    width_points = figure.get_figwidth() * 72.0
    characters = max(40, int(0.85 * width_points / (0.55 * fontsize)))
    line = f"{title}: " + "; ".join(labels)
    text = "\n".join(textwrap.wrap(line, characters, break_on_hyphens=False))
    handle = Line2D([], [], **CONTEXT_STYLE)
    handle.set_linewidth(2.0 * float(CONTEXT_STYLE["linewidth"]))  # visible at legend size
    return figure.legend(
        [handle],
        [text],
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=1,
        fontsize=fontsize,
        handlelength=2.5,
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


def write_summary(
    quick: bool,
    summary: pd.DataFrame,
    path: str | os.PathLike[str],
    draw: Callable[[], object] | None = None,
    frames: Mapping[str | os.PathLike[str], pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """The end of an experiment's ``reproduce``, inside a :func:`smoke_test` block when
    ``quick``: marks ``summary`` (:func:`mark_smoke_test`), writes ``frames`` (path -> frame)
    and the summary to ``path``, then calls ``draw`` (the figure). Returns the marked
    summary."""
    with smoke_test(quick):
        summary = mark_smoke_test(summary)
        for frame_path, frame in (frames or {}).items():
            write_frame(frame, frame_path)
        write_frame(summary, path)
        if draw is not None:
            draw()
    return summary


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
