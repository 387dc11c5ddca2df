"""One naming table for the methods of every experiment: CLI name, labels, CSV value, style.

Each experiment's files name a method by its **key** (the value in the ``method`` column of
its CSVs); :data:`METHODS` maps ``(experiment, key)`` to a :class:`Method` holding the
registered agent name (what ``bam-rl run --agent`` accepts, where one exists), the plain-text
label (tables, the report), the legend label (matplotlib mathtext) and a line style. Styles
pair a colour (the Okabe–Ito colour-blind-safe palette) with a distinct dash pattern and
marker, so every figure stays readable in greyscale; the same idea keeps the same look across
experiments (recursive Bayes is always blue and dashed, BAM always vermilion and solid).

:data:`ABBREVIATIONS` expands the short names used in legends; :func:`abbreviation_note`
writes the sentence a figure's caption carries.

>>> label("bandits", "thompson-forgetting")
'BF + Thompson'
>>> method("tracking", "bam").agent
'tracker-bam'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ABBREVIATIONS",
    "METHODS",
    "Method",
    "abbreviation_note",
    "label",
    "legend_label",
    "method",
    "methods",
    "style",
]

#: Okabe–Ito palette (colour-blind safe), by name.
PALETTE = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermilion": "#D55E00",
    "purple": "#CC79A7",
    "grey": "#7F7F7F",
}


@dataclass(frozen=True)
class Method:
    """One method of one experiment.

    Attributes:
        key: The value in the experiment's ``method`` column.
        agent: The registered agent (``bam-rl run --agent``), or ``None`` if the method is not
            an agent (the MNIST rows are readouts inside the experiment).
        label: Plain-text label (tables, the report, summary CSVs).
        legend: Legend label in matplotlib mathtext.
        color, linestyle, marker: The line's look (``linewidth`` and ``zorder`` too).
        abbreviations: The abbreviations the label uses (keys of :data:`ABBREVIATIONS`).
    """

    key: str
    agent: str | None
    label: str
    legend: str
    color: str
    linestyle: Any = "-"
    marker: str = "o"
    linewidth: float = 1.6
    zorder: float = 2.0
    abbreviations: tuple[str, ...] = field(default_factory=tuple)

    def style(self, markers: bool = False) -> dict[str, Any]:
        """Keyword arguments of ``Axes.plot`` (``markers``: also the marker)."""
        result = {
            "color": self.color,
            "linestyle": self.linestyle,
            "linewidth": self.linewidth,
            "zorder": self.zorder,
        }
        if markers:
            result["marker"] = self.marker
        return result


#: Short names used in legends and their expansions (said in every figure's caption).
ABBREVIATIONS: dict[str, str] = {
    "BAM": "Bayes with Adaptive Memory",
    "BF": "Bayesian exponential forgetting",
    "BOCD": "Bayesian online changepoint detection",
    "UCB": "upper confidence bound",
    "UCBAM": "UCB with BAM (Alg. 3)",
    "GT MPC": "MPPI planning with the true simulator",
    "MPPI": "model-predictive path-integral control",
    "OLS": "ordinary least squares",
    "NIG": "Normal-inverse-gamma (unknown noise)",
}

_DASH = (0, (6, 2))
_DOT = (0, (1, 1.5))
_DASHDOT = (0, (6, 2, 1, 2))
_DASHDOTDOT = (0, (4, 1.5, 1, 1.5, 1, 1.5))
_LONGDASH = (0, (10, 3))

# the look of a belief rule wherever a figure draws it on its own (``_m``'s keyword arguments)
_RECURSIVE_LOOK: dict[str, Any] = {"color": "blue", "linestyle": _DASH, "marker": "s"}
_FORGETTING_LOOK: dict[str, Any] = {
    "color": "green",
    "linestyle": _DOT,
    "marker": "v",
    "abbreviations": ("BF",),
    "linewidth": 2.0,
}
_BOCD_LOOK: dict[str, Any] = {
    "color": "orange",
    "linestyle": _DASHDOT,
    "marker": "^",
    "abbreviations": ("BOCD",),
}


def _m(
    key: str,
    agent: str | None,
    label: str,
    legend: str,
    color: str,
    linestyle: Any,
    marker: str,
    abbreviations: tuple[str, ...] = (),
    **extra: Any,
) -> Method:
    return Method(
        key,
        agent,
        label,
        legend,
        PALETTE[color],
        linestyle,
        marker,
        abbreviations=abbreviations,
        **extra,
    )


#: experiment -> key -> :class:`Method`, in the order the figures draw them.
METHODS: dict[str, dict[str, Method]] = {
    "tracking": {
        m.key: m
        for m in (
            _m(
                "recursive",
                "tracker-recursive",
                "Recursive Bayes",
                "Recursive Bayes",
                **_RECURSIVE_LOOK,
            ),
            _m("bocd", "tracker-bocd", "BOCD (hazard 1/100)", "BOCD (hazard 1/100)", **_BOCD_LOOK),
            _m(
                "forgetting",
                "tracker-forgetting",
                "BF (α = 0.8)",
                r"BF ($\alpha=0.8$)",
                **_FORGETTING_LOOK,
            ),
            # λ = 0 is drawn thick and underneath, λ = 0.1 thin and dashed on top: their medians
            # nearly coincide, and both stay visible
            _m(
                "bam",
                "tracker-bam",
                "BAM (λ = 0)",
                r"BAM ($\lambda=0$)",
                "vermilion",
                "-",
                "o",
                ("BAM",),
                linewidth=3.2,
                zorder=3.0,
            ),
            _m(
                "bam_reg",
                "tracker-bam-reg",
                "BAM (λ = 0.1)",
                r"BAM ($\lambda=0.1$)",
                "purple",
                _DASHDOTDOT,
                "D",
                ("BAM",),
                linewidth=1.4,
                zorder=4.0,
            ),
        )
    },
    "bandits": {
        m.key: m
        for m in (
            _m(
                "thompson",
                "thompson",
                "Thompson (recursive Bayes)",
                "Thompson (recursive Bayes)",
                **_RECURSIVE_LOOK,
            ),
            _m(
                "thompson-forgetting",
                "thompson-forgetting",
                "BF + Thompson",
                "BF + Thompson",
                **_FORGETTING_LOOK,
            ),
            _m(
                "thompson-bocd", "thompson-bocd", "BOCD + Thompson", "BOCD + Thompson", **_BOCD_LOOK
            ),
            _m("ucb", "ucb", "UCB", "UCB", "sky", _LONGDASH, "x", ("UCB",)),
            _m(
                "ucbam", "ucbam", "UCBAM", "UCBAM", "vermilion", "-", "o", ("UCBAM",), linewidth=2.2
            ),
        )
    },
    "cartpole": {
        m.key: m
        for m in (
            _m("bam", "mppi-bam", "BAM", "BAM", "vermilion", "-", "o", ("BAM",), linewidth=2.2),
            _m(
                "recursive",
                "mppi-recursive",
                "Recursive Bayes",
                "Recursive Bayes",
                **_RECURSIVE_LOOK,
            ),
            _m(
                "gt",
                "mppi-gt",
                "GT MPC (true simulator)",
                "GT MPC (true simulator)",
                "black",
                _DOT,
                "*",
                ("GT MPC",),
                linewidth=1.8,
            ),
            _m(
                "bam_bocd",
                "mppi-bam-bocd",
                "BAM + BOCD",
                "BAM + BOCD",
                "purple",
                _DASHDOT,
                "D",
                ("BAM", "BOCD"),
            ),
            _m("bocd", "mppi-bocd", "BOCD", "BOCD", "orange", _DASH, "^", ("BOCD",)),
            _m(
                "bam_segments",
                "mppi-bam-segments",
                "Segment BAM (beyond the paper)",
                "Segment BAM (beyond the paper)",
                "green",
                "-",
                "P",
                ("BAM",),
                linewidth=2.0,
            ),
        )
    },
    "mnist": {
        m.key: m
        for m in (
            _m(
                "ols",
                None,
                "OLS (all training domains)",
                "OLS (all training domains)",
                "blue",
                _DASH,
                "s",
                ("OLS",),
            ),
            _m(
                "bam_paper",
                None,
                "BAM greedy, σ² = 1e-4 (paper)",
                r"BAM greedy, $\sigma^2=10^{-4}$ (paper)",
                "orange",
                _DASHDOT,
                "^",
                ("BAM",),
            ),
            _m(
                "bam",
                None,
                "BAM greedy, σ² by evidence",
                r"BAM greedy, $\sigma^2$ by evidence",
                "vermilion",
                "-",
                "o",
                ("BAM",),
            ),
            _m(
                "bam_nig",
                None,
                "BAM greedy, unknown σ² (NIG)",
                r"BAM greedy, unknown $\sigma^2$ (NIG)",
                "purple",
                _DASHDOTDOT,
                "D",
                ("BAM", "NIG"),
            ),
            _m(
                "bam_parallel",
                None,
                "BAM parallel (Alg. 2), σ² by evidence",
                r"BAM parallel (Alg. 2), $\sigma^2$ by evidence",
                "green",
                _DOT,
                "v",
                ("BAM",),
            ),
            _m(
                "all_domains",
                None,
                "all domains + 10 labels (W = 1)",
                r"all domains + 10 labels ($W=1$)",
                "grey",
                _LONGDASH,
                "x",
            ),
        )
    },
}


def methods(experiment: str) -> dict[str, Method]:
    """The methods of ``experiment`` (``"tracking"``, ``"bandits"``, ``"cartpole"``,
    ``"mnist"``), ``key -> Method``."""
    if experiment not in METHODS:
        raise ValueError(f"experiment must be one of {sorted(METHODS)}, got {experiment!r}")
    return METHODS[experiment]


def method(experiment: str, key: str) -> Method:
    """The :class:`Method` of ``key`` in ``experiment``; an unknown key gets a grey line."""
    table = methods(experiment)
    if key in table:
        return table[key]
    return Method(str(key), None, str(key), str(key), PALETTE["grey"], ":", ".")


def label(experiment: str, key: str) -> str:
    """Plain-text label of a method (tables, CSVs, the report)."""
    return method(experiment, key).label


def legend_label(experiment: str, key: str) -> str:
    """Mathtext legend label of a method."""
    return method(experiment, key).legend


def style(experiment: str, key: str, markers: bool = False) -> dict[str, Any]:
    """``Axes.plot`` keyword arguments of a method."""
    return method(experiment, key).style(markers)


def abbreviation_note(experiment: str, keys: Any = None) -> str:
    """The caption sentence expanding the abbreviations of ``experiment``'s methods (``keys``:
    only these), e.g. ``"BF: Bayesian exponential forgetting; BOCD: …"``; empty if none."""
    table = methods(experiment)
    chosen = [table[k] for k in (keys if keys is not None else table) if k in table]
    names: list[str] = []
    for entry in chosen:
        for name in entry.abbreviations:
            if name not in names:
                names.append(name)
    return "; ".join(f"{name}: {ABBREVIATIONS[name]}" for name in names)
