"""The figure of Exp. 4 (rotated MNIST): accuracy per method and the training domains BAM's
readout selected (:func:`plot_mnist`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bam_rl.harness import naming
from bam_rl.harness.plotting import (
    add_caption,
    count_text,
    new_figure,
    plot_points,
    save_figure,
)

#: method -> label in the figure and the summary (the naming table, :mod:`bam_rl.harness.naming`)
METHODS = {key: entry.label for key, entry in naming.methods("mnist").items()}
#: The paper's results (§4.4): mean and standard deviation of the accuracy over 10 seeds, in %.
PAPER = {"ols": (55.0, 3.7), "bam_paper": (71.8, 5.2)}
#: method -> short tick label of the figure
SHORT = {
    "ols": "OLS",
    "bam_paper": "BAM\n$\\sigma^2=10^{-4}$\n(paper)",
    "bam": "BAM\n$\\sigma^2$ by\nevidence",
    "bam_nig": "BAM\nNIG",
    "bam_parallel": "parallel\n(Alg. 2)",
    "all_domains": "all domains\n+ 10 labels",
}


def plot_mnist(
    frame: pd.DataFrame, path: str | Path | None = None, method: str = "bam", examples: int = 4
):
    """Accuracy per method (seeds as dots, mean ± sd, the paper's values as diamonds) and
    the training-domain angles the BAM readout ``method`` selected: for a few test domains
    of the first seed, and against the test angle over every seed."""
    figure, (left, middle, right) = new_figure(
        1, 3, figsize=(18, 5.0), gridspec_kw={"width_ratios": [1.4, 1.0, 1.0]}
    )
    methods = [m for m in METHODS if m in set(frame["method"])]
    per_seed = frame.groupby(["method", "seed"])["accuracy"].mean() * 100
    for position, name in enumerate(methods):
        entry = naming.method("mnist", name)
        plot_points(
            left,
            position,
            per_seed.loc[name].to_numpy(),
            entry.color,
            entry.marker,
            summary_label="mean ± sd over seeds" if position == 0 else None,
        )
        if name in PAPER:
            mean, paper_sd = PAPER[name]
            left.errorbar(
                position + 0.42,
                mean,
                yerr=paper_sd,
                fmt="D",
                color="#D55E00",
                mfc="white",
                capsize=4,
                label="paper (785 features)" if name == "ols" or "ols" not in methods else None,
            )
    left.set_xticks(range(len(methods)))
    left.set_xticklabels([SHORT[m] for m in methods], fontsize=8)
    sides = sorted(frame["side"].unique()) if "side" in frame else []
    features = ", ".join(f"{s * s + 1} features" for s in sides)
    left.set(
        ylabel="test accuracy (%)",
        xlim=(-0.5, len(methods) - 0.3),
        title=f"Accuracy per method ({features}; dots: seeds)",
    )
    left.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.2), ncol=2)
    left.grid(axis="y", alpha=0.3)

    chosen = frame[frame["method"] == method]
    if chosen.empty:
        middle.set_axis_off()
        right.set_axis_off()
    else:
        first = chosen[chosen["seed"] == chosen["seed"].min()].head(examples)
        all_angles = _training_angles(frame, chosen["seed"].min())
        for row_index, (_, row) in enumerate(first.iterrows()):
            y = np.full(all_angles.size, row_index)
            middle.scatter(
                all_angles,
                y,
                marker="|",
                s=150,
                color="0.75",
                label="training domains" if row_index == 0 else None,
            )
            picked = _parse_angles(row["selected_angles_deg"])
            middle.scatter(
                picked,
                np.full(picked.size, row_index),
                marker="o",
                s=40,
                color=naming.method("mnist", method).color,
                label="selected by BAM" if row_index == 0 else None,
            )
            middle.scatter(
                [row["angle_deg"]],
                [row_index],
                marker="*",
                s=180,
                color="black",
                label="test domain" if row_index == 0 else None,
                zorder=3,
            )
        middle.set_yticks(range(len(first)))
        middle.set_yticklabels([f"test domain {int(d)}" for d in first["domain"]], fontsize=8)
        middle.set(
            xlabel="rotation angle (degrees)",
            xlim=(-5, 185),
            ylim=(-0.6, len(first)),
            title=f"{naming.legend_label('mnist', method)}: seed {int(chosen['seed'].min())}",
        )
        middle.legend(fontsize=7, loc="upper center", ncol=3, bbox_to_anchor=(0.5, -0.13))

        xs: list[float] = []
        ys: list[float] = []
        for _, row in chosen.iterrows():
            picked = _parse_angles(row["selected_angles_deg"])
            xs.extend([row["angle_deg"]] * picked.size)
            ys.extend(picked)
        right.scatter(
            xs,
            ys,
            s=10,
            alpha=0.5,
            color=naming.method("mnist", method).color,
            label="selected domain",
        )
        right.plot([0, 180], [0, 180], color="black", lw=1, ls="--", label="same angle")
        right.set(
            xlabel="test-domain angle (degrees)",
            ylabel="selected training angle (degrees)",
            xlim=(0, 180),
            ylim=(0, 180),
            title="selected angles, every seed",
        )
        right.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.13), ncol=2)
    seeds = frame["seed"].nunique()
    figure.suptitle(
        "Experiment 4: rotated MNIST, 10 labelled examples per test domain "
        f"({count_text(seeds, 'seed')})",
        fontsize=12,
    )
    add_caption(
        figure,
        "Left: test accuracy, one dot per seed (mean over its 8 test domains), "
        "black: mean ± sd over seeds, open diamonds: the paper's numbers. Middle and "
        "right: rotation angles of the training domains the BAM readout selected. "
        f"{naming.abbreviation_note('mnist', methods)}; Alg. 2: the parallel readout; "
        "$W=1$: every training domain remembered.",
        width=190,
    )
    return save_figure(figure, path)


def _parse_angles(text: Any) -> np.ndarray:
    if not isinstance(text, str) or not text:
        return np.zeros(0)
    return np.array([float(v) for v in text.split(";")])


def _training_angles(frame: pd.DataFrame, seed: int) -> np.ndarray:
    """Every training angle of ``seed`` (the OLS rows list all domains; else the union of the
    selections)."""
    rows = frame[(frame["seed"] == seed) & (frame["method"].isin(["ols", "all_domains"]))]
    if not rows.empty:
        return _parse_angles(rows["selected_angles_deg"].iloc[0])
    texts = frame.loc[frame["seed"] == seed, "selected_angles_deg"]
    return np.unique(np.concatenate([_parse_angles(t) for t in texts] or [np.zeros(0)]))
