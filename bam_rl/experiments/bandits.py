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

from bam_rl.experiments.options import RunOptions, claims_from, reproduction, sweep_backend
from bam_rl.harness import naming, plotting
from bam_rl.harness.files import write_frame

#: agent name in the harness registry (also the CSV value) -> label in the paper's Figure 3,
#: from the naming table (:mod:`bam_rl.harness.naming`)
METHODS = {key: entry.label for key, entry in naming.methods("bandits").items()}
#: Quantiles of the figure's bands (as in the paper).
QUANTILES = (0.25, 0.75)


#: arm-value settings -> SwitchingBandit keyword arguments
SETTINGS: dict[str, dict] = {
    "uniform": {},  # both values of each arm ~ U(0, 1), the environment's default
    "separated": {"low_range": (0.0, 0.4), "high_range": (0.6, 1.0)},
}
#: The settings as said in figure titles.
SETTING_TITLES = {
    "uniform": "uniform arm values: both values of an arm ~ U(0, 1)",
    "separated": "separated arm values: low ~ U(0, 0.4), high ~ U(0.6, 1)",
}


def bandit_configs(
    arms: tuple[int, ...] = (10, 50),
    configurations: int = 5,
    n_steps: int = 10_000,
    env_kwargs: dict | None = None,
) -> dict[str, tuple[str, dict]]:
    """``label -> (env id, kwargs)`` for every (arm count, arm configuration); ``env_kwargs``
    (e.g. ``low_range``/``high_range``) are passed to every environment."""
    return {
        f"{k}arms-config{c}": (
            "bam_rl/SwitchingBandit-v0",
            {"n_arms": k, "config_seed": c, "max_steps": n_steps, **(env_kwargs or {})},
        )
        for k in arms
        for c in range(configurations)
    }


def bandit_experiment(
    arms: tuple[int, ...] = (10, 50),
    configurations: int = 5,
    seeds: int = 5,
    n_steps: int = 10_000,
    methods: tuple[str, ...] = tuple(METHODS),
    n_jobs: int = 1,
    out_dir: str | Path | None = None,
    progress: bool = True,
    env_kwargs: dict | None = None,
    backend: str | None = None,
) -> pd.DataFrame:
    """Runs the sweep (resumable when ``out_dir`` is given) and returns cumulative regret;
    ``backend`` defaults to serial for one job, else loky.

    Returns:
        Columns ``method, arms, config, seed, step, cumulative_regret``, one row per step.
    """
    from bam_rl.harness import make_grid, run_many

    configs = bandit_configs(arms, configurations, n_steps, env_kwargs)
    grid = make_grid(list(methods), configs, seeds=seeds, n_steps=n_steps)
    frame = run_many(
        grid,
        backend=sweep_backend(backend, n_jobs),
        n_jobs=n_jobs,
        out_dir=out_dir,
        progress=progress,
    )
    frame = frame[["method", "config", "seed", "step", "regret"]].copy()
    frame["arms"] = frame["config"].str.extract(r"^(\d+)arms")[0].astype(int)
    frame = frame.sort_values(["method", "config", "seed", "step"], kind="stable")
    frame["cumulative_regret"] = frame.groupby(["method", "config", "seed"])["regret"].cumsum()
    return frame.drop(columns="regret").reset_index(drop=True)


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Final cumulative regret per (arms, method): mean and 25/50/75 % quantiles over runs."""
    last = frame.loc[frame.groupby(["method", "config", "seed"])["step"].idxmax()]
    grouped = last.groupby(["arms", "method"])["cumulative_regret"]
    summary = grouped.agg(
        mean="mean",
        q25=lambda x: x.quantile(0.25),
        median="median",
        q75=lambda x: x.quantile(0.75),
        runs="size",
    ).reset_index()
    return summary.sort_values(["arms", "median"]).reset_index(drop=True)


def plot_bandits(
    frame: pd.DataFrame, path: str | Path | None = None, every: int = 20, setting: str | None = None
):
    """The paper's Figure 3: cumulative regret over time, median with 25–75 % bands, one panel
    per arm count and one legend; ``setting`` (a key of :data:`SETTINGS`) goes in the title."""
    arm_counts = sorted(frame["arms"].unique())
    figure, axes = plotting.new_figure(
        1, len(arm_counts), figsize=(5.2 * len(arm_counts) + 1.0, 4.2), squeeze=False
    )
    thinned = frame[frame["step"] % every == 0]
    for axis, arms in zip(axes[0], arm_counts, strict=True):
        for method in METHODS:
            runs = thinned[(thinned["arms"] == arms) & (thinned["method"] == method)]
            if runs.empty:
                continue
            entry = naming.method("bandits", method)
            plotting.plot_band(
                axis,
                runs.groupby("step")["cumulative_regret"],
                entry.legend,
                quantiles=QUANTILES,
                **entry.style(),
            )
        axis.set(title=f"{arms} arms", xlabel="step $t$", ylabel="cumulative regret")
    runs = frame.groupby(["arms", "config", "seed"]).ngroups // max(len(arm_counts), 1)
    configs = frame.groupby("arms")["config"].nunique().max()
    title = "Experiment 3: switching bandits"
    if setting is not None:
        title += f" — {SETTING_TITLES.get(setting, setting)}"
    figure.suptitle(title, fontsize=12)
    plotting.figure_legend(figure, axes[0])
    plotting.add_caption(
        figure,
        f"{plotting.band_note(QUANTILES, over='runs')} ({configs} arm configurations × "
        f"{runs // max(configs, 1)} seed(s) = {runs} runs per arm count). "
        f"{naming.abbreviation_note('bandits')}.",
        width=45 + 55 * len(arm_counts),
    )
    return plotting.save_figure(figure, path)


@reproduction(default_seeds=5, quick_seeds=2)
def reproduce(options: RunOptions, backend: str | None = None) -> pd.DataFrame:
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
        backend: ``"serial"``, ``"loky"`` or ``"ray"`` (default: serial for one job, else
            loky); with ``"ray"``, ``RAY_ADDRESS`` may name a running cluster.
    """
    out, quick = options.out, options.quick
    kwargs: dict[str, Any]
    if quick:
        kwargs = {"arms": (10,), "configurations": 2, "n_steps": 2_000}
    else:
        kwargs = {"arms": (10, 50), "configurations": 5, "n_steps": 10_000}
    summaries = []
    for setting, env_kwargs in SETTINGS.items():
        folder = out / setting
        folder.mkdir(parents=True, exist_ok=True)
        frame = bandit_experiment(
            seeds=options.seeds,
            n_jobs=options.n_jobs,
            out_dir=folder / "runs",
            progress=options.progress,
            env_kwargs=env_kwargs,
            backend=backend,
            **kwargs,
        )
        write_frame(frame[frame["step"] % 20 == 0], folder / "bandits_regret.csv")
        with plotting.smoke_test(quick):
            plot_bandits(frame, folder / "bandits.png", setting=setting)
        summary = summarize(frame)
        summary.insert(0, "setting", setting)
        summaries.append(summary)
    return plotting.write_summary(
        quick, pd.concat(summaries, ignore_index=True), out / "bandits_summary.csv"
    )


#: The paper's claims of §4.3, in order (the rows of the report's claim table).
CLAIMS = (
    "UCBAM outperforms the other methods with 10 arms (lowest cumulative regret).",
    "UCBAM outperforms the other methods with 50 arms (lowest cumulative regret).",
    "Thompson sampling (recursive Bayes) fails to capture the arms' current values and suffers "
    "a large penalty, while UCB's exploration does better.",
    "BOCD + Thompson achieves low regret with 10 arms (below recursive Thompson and BF + "
    "Thompson).",
    "BOCD + Thompson reverts to its prior too often to perform well with 50 arms (it ranks "
    "worse among the methods than with 10 arms).",
)


def _verdict(results: list[bool]) -> bool | str | None:
    if not results:
        return None
    if all(results):
        return True
    return "partly" if any(results) else False


@claims_from("bandits_summary.csv", "bandits", "§4.3", CLAIMS)
def claims(summary: pd.DataFrame) -> list[dict[str, str]]:
    """The claims of §4.3 with the final median cumulative regret of
    ``folder/bandits_summary.csv``, per arm-value setting (a claim that holds in one setting
    only holds "partly"); ``None`` or a missing file: "not run"."""
    from bam_rl.experiments.report import claim

    short = {
        "thompson": "TS",
        "thompson-forgetting": "BF",
        "thompson-bocd": "BOCD",
        "ucb": "UCB",
        "ucbam": "UCBAM",
    }

    def medians(setting: str, arms: int) -> dict[str, float]:
        rows = summary[(summary["setting"] == setting) & (summary["arms"] == arms)]
        return dict(zip(rows["method"], rows["median"].astype(float), strict=True))

    def listing(values: dict[str, float]) -> str:
        ordered = sorted(values, key=values.__getitem__)
        return " < ".join(f"{short.get(m, m)} {values[m]:.0f}" for m in ordered)

    settings = [s for s in SETTINGS if s in set(summary["setting"])]

    def per_setting(arms: int, test: Any) -> tuple[str | None, bool | str | None]:
        texts, results = [], []
        for setting in settings:
            values = medians(setting, arms)
            if set(values) != set(METHODS):
                continue
            ok = bool(test(values))
            results.append(ok)
            texts.append(f"{setting}: {listing(values)} ({'holds' if ok else 'does not'})")
        if not texts:
            return f"no {arms}-arm runs", None
        return "; ".join(texts), _verdict(results)

    def best(values: dict[str, float]) -> bool:
        return min(values, key=values.__getitem__) == "ucbam"

    def bocd_low(values: dict[str, float]) -> bool:
        return values["thompson-bocd"] < min(values["thompson"], values["thompson-forgetting"])

    rows = [
        claim("bandits", "§4.3", CLAIMS[0], *per_setting(10, best)),
        claim("bandits", "§4.3", CLAIMS[1], *per_setting(50, best)),
    ]
    texts, results = [], []
    for setting in settings:
        for arms in sorted(summary["arms"].unique()):
            values = medians(setting, int(arms))
            if {"thompson", "ucb"} <= set(values):
                ok = values["thompson"] > values["ucb"]
                results.append(ok)
                texts.append(
                    f"{setting}, {arms} arms: TS {values['thompson']:.0f} vs UCB "
                    f"{values['ucb']:.0f}"
                )
    rows.append(claim("bandits", "§4.3", CLAIMS[2], "; ".join(texts) or None, _verdict(results)))
    rows.append(claim("bandits", "§4.3", CLAIMS[3], *per_setting(10, bocd_low)))
    texts, results = [], []
    for setting in settings:
        ten, fifty = medians(setting, 10), medians(setting, 50)
        if set(ten) == set(fifty) == set(METHODS):
            ranks = [sorted(v, key=v.__getitem__).index("thompson-bocd") + 1 for v in (ten, fifty)]
            results.append(ranks[1] > ranks[0])
            texts.append(
                f"{setting}: BOCD + Thompson ranks {ranks[0]} of 5 with 10 arms, "
                f"{ranks[1]} of 5 with 50"
            )
    rows.append(
        claim("bandits", "§4.3", CLAIMS[4], "; ".join(texts) or "no 50-arm runs", _verdict(results))
    )
    return rows


__all__ = [
    "CLAIMS",
    "METHODS",
    "SETTINGS",
    "bandit_configs",
    "bandit_experiment",
    "claims",
    "plot_bandits",
    "reproduce",
    "summarize",
]


def scale(folder: str | Path) -> str:
    """What the ``bandits_regret.csv`` files of ``folder`` hold, counted (the report's
    caption): per setting and arm count, arm configurations × seeds = runs per method; ``""``
    without them. ``folder`` is the experiment's folder or one setting's (``<out>/uniform``)."""
    folder = Path(folder)
    if (folder / "bandits_regret.csv").is_file():
        paths = {folder.name: folder / "bandits_regret.csv"}
    else:
        paths = {setting: folder / setting / "bandits_regret.csv" for setting in SETTINGS}
    parts = []
    for setting, path in paths.items():
        if not path.is_file():
            continue
        frame = pd.read_csv(path, usecols=["method", "config", "seed", "arms"])
        for arms, rows in frame.groupby("arms"):
            configs = rows["config"].nunique()
            runs = int(
                rows.drop_duplicates(["method", "config", "seed"])["method"].value_counts().max()
            )
            parts.append(
                f"{setting}, {arms} arms: {plotting.count_text(configs, 'arm configuration')} × "
                f"{plotting.count_text(runs // max(configs, 1), 'seed')} = "
                f"{plotting.count_text(runs, 'run')} per method"
            )
    return f"This run: {'; '.join(parts)}." if parts else ""
