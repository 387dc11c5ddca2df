"""Experiment 3 (paper §4.3, App. D.3–D.4): non-stationary bandits with switching arms.

Each arm alternates asynchronously between its own high and low value (switch probability
0.016 per step) with Gaussian reward noise σ = 0.25. Methods, with the paper's settings:
Thompson sampling with recursive Bayes, with exponential forgetting (0.8), with BOCD
(hazard 0.016, Mellor & Shapiro), UCB with ``f(t) = 1 + t log² t``, and UCBAM (λ = 0).
Results are averaged over 5 arm configurations (``config_seed``) × 5 seeds each, as in the
paper; the figure shows the median cumulative regret with 25–75 % bands.

The paper does not say how the two values of an arm are drawn, and the outcome depends on it
(:data:`SETTINGS`): with both values uniform on [0, 1] the arm with the best *average* is
nearly optimal throughout, which favours stationary learners; with separated low and high
values the best arm really changes with the switches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from bam_rl.harness.files import write_frame
from bam_rl.harness.plotting import new_figure, plot_band, save_figure

#: agent name in the harness registry -> label in the paper's Figure 3
METHODS = {
    "thompson": "Thompson (recursive)",
    "thompson-forgetting": "BF + Thompson",
    "thompson-bocd": "BOCD + Thompson",
    "ucb": "UCB",
    "ucbam": "UCBAM",
}


#: arm-value settings -> SwitchingBandit keyword arguments
SETTINGS: dict[str, dict] = {
    "uniform": {},  # both values of each arm ~ U(0, 1), the environment's default
    "separated": {"low_range": (0.0, 0.4), "high_range": (0.6, 1.0)},
}


def bandit_configs(arms: tuple[int, ...] = (10, 50), configurations: int = 5,
                   n_steps: int = 10_000, env_kwargs: dict | None = None
                   ) -> dict[str, tuple[str, dict]]:
    """``label -> (env id, kwargs)`` for every (arm count, arm configuration); ``env_kwargs``
    (e.g. ``low_range``/``high_range``) are passed to every environment."""
    return {f"{k}arms-config{c}": ("bam_rl/SwitchingBandit-v0",
                                   {"n_arms": k, "config_seed": c, "max_steps": n_steps,
                                    **(env_kwargs or {})})
            for k in arms for c in range(configurations)}


def bandit_experiment(arms: tuple[int, ...] = (10, 50), configurations: int = 5, seeds: int = 5,
                      n_steps: int = 10_000, methods: tuple[str, ...] = tuple(METHODS),
                      n_jobs: int = 1, out_dir: str | Path | None = None,
                      progress: bool = True, env_kwargs: dict | None = None) -> pd.DataFrame:
    """Runs the sweep (resumable when ``out_dir`` is given) and returns cumulative regret.

    Returns:
        Columns ``method, arms, config, seed, step, cumulative_regret``, one row per step.
    """
    from bam_rl.harness import make_grid, run_many

    configs = bandit_configs(arms, configurations, n_steps, env_kwargs)
    grid = make_grid(list(methods), configs, seeds=seeds, n_steps=n_steps)
    frame = run_many(grid, backend="loky" if n_jobs != 1 else "serial", n_jobs=n_jobs,
                     out_dir=out_dir, progress=progress)
    frame = frame[["method", "config", "seed", "step", "regret"]].copy()
    frame["arms"] = frame["config"].str.extract(r"^(\d+)arms")[0].astype(int)
    frame = frame.sort_values(["method", "config", "seed", "step"], kind="stable")
    frame["cumulative_regret"] = frame.groupby(["method", "config", "seed"])["regret"].cumsum()
    return frame.drop(columns="regret").reset_index(drop=True)


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Final cumulative regret per (arms, method): mean and 25/50/75 % quantiles over runs."""
    last = frame.loc[frame.groupby(["method", "config", "seed"])["step"].idxmax()]
    grouped = last.groupby(["arms", "method"])["cumulative_regret"]
    summary = grouped.agg(mean="mean", q25=lambda x: x.quantile(0.25), median="median",
                          q75=lambda x: x.quantile(0.75), runs="size").reset_index()
    return summary.sort_values(["arms", "median"]).reset_index(drop=True)


def plot_bandits(frame: pd.DataFrame, path: str | Path | None = None, every: int = 20):
    """The paper's Figure 3: cumulative regret over time, median with 25–75 % bands."""
    arm_counts = sorted(frame["arms"].unique())
    figure, axes = new_figure(1, len(arm_counts), figsize=(6 * len(arm_counts), 4),
                              squeeze=False)
    thinned = frame[frame["step"] % every == 0]
    for axis, arms in zip(axes[0], arm_counts, strict=True):
        for method, label in METHODS.items():
            runs = thinned[(thinned["arms"] == arms) & (thinned["method"] == method)]
            if runs.empty:
                continue
            plot_band(axis, runs.groupby("step")["cumulative_regret"], label,
                      quantiles=(0.25, 0.75))
        axis.set(title=f"{arms} arms", xlabel="step", ylabel="cumulative regret")
        axis.legend(fontsize=8)
    return save_figure(figure, path)


def reproduce(out: str | Path, seeds: int | None = None, quick: bool = False, n_jobs: int = 1,
              progress: bool = True) -> pd.DataFrame:
    """Runs Experiment 3 in every arm-value setting of :data:`SETTINGS`.

    Writes ``bandits_summary.csv`` to ``out`` and, per setting, ``out/<setting>/bandits.png``,
    ``bandits_regret.csv`` (every 20th step) and the per-run files in ``out/<setting>/runs``
    (an interrupted reproduction resumes). Returns the summary.

    Args:
        out: Output directory.
        seeds: Seeds per arm configuration (paper: 5; ``quick``: 2).
        quick: 10 arms, 2 configurations, 2,000 steps.
        n_jobs: Parallel workers.
        progress: Show a progress bar.
    """
    out = Path(out)
    kwargs: dict[str, Any]
    if quick:
        kwargs = {"arms": (10,), "configurations": 2, "n_steps": 2_000}
        seeds = seeds if seeds is not None else 2
    else:
        kwargs = {"arms": (10, 50), "configurations": 5, "n_steps": 10_000}
        seeds = seeds if seeds is not None else 5
    summaries = []
    for setting, env_kwargs in SETTINGS.items():
        folder = out / setting
        folder.mkdir(parents=True, exist_ok=True)
        frame = bandit_experiment(seeds=seeds, n_jobs=n_jobs, out_dir=folder / "runs",
                                  progress=progress, env_kwargs=env_kwargs, **kwargs)
        write_frame(frame[frame["step"] % 20 == 0], folder / "bandits_regret.csv")
        plot_bandits(frame, folder / "bandits.png")
        summary = summarize(frame)
        summary.insert(0, "setting", setting)
        summaries.append(summary)
    summary = pd.concat(summaries, ignore_index=True)
    write_frame(summary, out / "bandits_summary.csv")
    return summary


__all__ = ["METHODS", "SETTINGS", "bandit_configs", "bandit_experiment", "plot_bandits",
           "reproduce", "summarize"]
