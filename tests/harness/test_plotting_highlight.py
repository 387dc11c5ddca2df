"""Figures with many methods (issue 43): the highlighted methods get strong, distinct colours
and labels at their line ends; the others are thin grey lines named in one legend row that
stays clear of the title and the smoke-test banner."""

from __future__ import annotations

import itertools
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
import pytest

from bam_rl.experiments import piecewise
from bam_rl.harness.plotting import (
    CONTEXT_STYLE,
    HIGHLIGHT_COLORS,
    context_legend,
    highlight_styles,
    label_line_ends,
    new_figure,
    plot_highlighted,
    save_figure,
    smoke_test,
)

matplotlib.use("Agg")
from matplotlib import colors as mcolors
from matplotlib.legend import Legend


def _grey(color) -> bool:
    return mcolors.same_color(color, CONTEXT_STYLE["color"])


def _extents(figure, artists):
    renderer = figure.canvas.get_renderer()
    return [artist.get_window_extent(renderer) for artist in artists]


def _check_highlighted(axis, highlighted_labels, other_labels):
    lines = {line.get_label(): line for line in axis.get_lines()}
    strong = [lines[name] for name in highlighted_labels]
    grey = [lines[name] for name in other_labels]
    colours = [mcolors.to_hex(line.get_color()) for line in strong]
    assert len(set(colours)) == len(strong), colours  # one colour each
    assert not any(_grey(c) for c in colours)
    assert all(c in {h.lower() for h in HIGHLIGHT_COLORS} for c in colours)
    assert grey and all(_grey(line.get_color()) for line in grey)
    thinnest_strong = min(line.get_linewidth() for line in strong)
    assert all(line.get_linewidth() < thinnest_strong for line in grey)
    assert min(line.get_zorder() for line in strong) > max(line.get_zorder() for line in grey)
    # an end label per highlighted line, in its colour, right of the panel, none overlapping
    texts = {text.get_text(): text for text in axis.texts}
    assert set(highlighted_labels) <= set(texts)
    assert not set(other_labels) & set(texts)
    for name in highlighted_labels:
        assert mcolors.same_color(texts[name].get_color(), lines[name].get_color())
        assert texts[name].xy[0] == 1.0 and texts[name].xycoords == "axes fraction"
    boxes = _extents(axis.figure, [texts[name] for name in highlighted_labels])
    right = axis.get_window_extent().x1
    assert all(box.x0 >= right for box in boxes)
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b)


def test_highlighted_methods_are_strong_labelled_and_the_rest_grey():
    _, axis = new_figure(figsize=(6, 4))
    x = np.arange(100)
    keys = [f"m{i}" for i in range(9)]
    # three highlighted curves ending almost together: their labels must be pushed apart
    curves: dict[str, tuple[Any, ...]] = {
        k: (x, 10 + i * 0.01 * x, 9 + i * 0.01 * x, 11 + i * 0.01 * x) for i, k in enumerate(keys)
    }
    curves["m7"] = (x, 50 + 0.001 * x, 49 + 0.001 * x, 51 + 0.001 * x)
    curves["m8"] = (x, 50.5 + 0.001 * x)
    highlighted = ["m7", "m2", "m8"]
    labels = {k: f"method {k}" for k in keys}
    lines = plot_highlighted(axis, curves, highlighted, labels)
    assert set(lines) == set(keys) and all(lines[k].get_gid() == k for k in keys)
    label_line_ends(axis, {labels[k]: lines[k] for k in highlighted})
    _check_highlighted(
        axis, [labels[k] for k in highlighted], [labels[k] for k in keys if k not in highlighted]
    )
    # bands for the highlighted methods given one, none for the grey ones
    assert len(axis.collections) == 2


def test_highlight_styles_refuses_repeats_and_too_many():
    with pytest.raises(ValueError, match="repeat"):
        highlight_styles(["a", "b"], ["a", "a"])
    many = [str(i) for i in range(len(HIGHLIGHT_COLORS) + 1)]
    with pytest.raises(ValueError, match="at most"):
        highlight_styles(many, many)
    fixed = highlight_styles(["a", "b", "c"], ["a", "b"], colors={"b": "#000000"})
    assert fixed["b"]["color"] == "#000000" and fixed["a"]["color"] != "#000000"
    assert _grey(fixed["c"]["color"])


def _legend_clear_of_the_top(figure, legend):
    save_figure(figure, None)
    figure.canvas.draw()
    box = _extents(figure, [legend])[0]
    top_texts = [t for t in figure.texts if t.get_window_extent().y0 > box.y1]
    if figure._suptitle is not None:
        top_texts.append(figure._suptitle)
    for text in top_texts:
        assert not box.overlaps(text.get_window_extent())
    for axis in figure.axes:
        if axis.get_visible():
            assert box.y1 <= axis.get_window_extent().y0  # under every panel


def _frame() -> pd.DataFrame:
    rows = []
    steps = np.arange(0, 5001, 500)
    for j, method in enumerate(piecewise.METHODS):
        for run in range(2):
            regret = (1 + j) * np.log1p(steps) * (1 + 0.1 * run)
            rows += [
                {"problem": p, "method": method, "run": run, "step": s, "cumulative_regret": r}
                for p in ("1", "2")
                for s, r in zip(steps, regret, strict=True)
            ]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("quick", [False, True])
def test_the_piecewise_figure_highlights_the_five_methods_the_text_discusses(quick):
    with smoke_test(quick):
        figure = piecewise.plot_piecewise(_frame())
    assert len(piecewise.HIGHLIGHTED) == 5
    highlighted = [piecewise._END_LABELS[m] for m in piecewise.HIGHLIGHTED]
    others = [piecewise.METHODS[m][2] for m in piecewise.METHODS if m not in piecewise.HIGHLIGHTED]
    panels = [axis for axis in figure.axes if axis.get_visible()]
    assert len(panels) == 2
    for axis in panels:
        _check_highlighted(axis, highlighted, others)
    legends = [child for child in figure.get_children() if isinstance(child, Legend)]
    assert len(legends) == 1 and len(legends[0].get_texts()) == 1  # one legend row
    text = legends[0].get_texts()[0].get_text().replace("\n", " ")
    assert text.split(": ", 1)[1].split("; ") == others  # every other method, in order
    _legend_clear_of_the_top(figure, legends[0])


def test_context_legend_wraps_and_sits_under_the_panels():
    figure, _ = new_figure(1, 2, figsize=(8, 3))
    figure.suptitle("a title")
    legend = context_legend(figure, [f"a rather long method name {i}" for i in range(12)])
    assert legend.get_texts()[0].get_text().count("\n") >= 1
    assert context_legend(figure, []) is None
    _legend_clear_of_the_top(figure, legend)
