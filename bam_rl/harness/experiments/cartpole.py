"""Experiment 2 (paper §4.2, App. D.1): MPPI with a BAM dynamics model on the cart-pole.

Two settings, each a sweep of (method × seed) runs through :func:`~bam_rl.harness.run_many`
(resumable, parallel):

* **episodic** (``bam_rl/GravityCartPoleEpisodic-v0``): gravities 9.81, 11.15, 3.72, 11.15, 3.72,
  9.81 m/s², 15 trials of 200 steps each, every change announced (``info["context_changed"]``).
  Methods: BAM (``mppi-bam``: after the first trial of an episode, a readout over every past
  trial), recursive Bayes (``mppi-recursive``: back to the base prior at each episode) and MPPI on
  the true simulator (``mppi-gt``, the paper's "GT MPC"; a reference that does not learn, run
  on the first trial of each episode and drawn across the episode).
* **continual** (``bam_rl/GravityCartPoleContinual-v0``): 60 trials, gravities 9.81, 3.72, 9.81,
  11.15 for 15 trials each, changes *not* announced. Methods: BAM selecting after every trial
  (``mppi-bam``), BAM selecting when BOCD over trials signals a change (``mppi-bam-bocd``) and
  BOCD alone (``mppi-bocd``: back to the base prior at a detected change), hazard 0.11.

The reward of a trial is the **mean** of the per-step reward ``cos(angle)`` over its 200 steps
(1 is the pole upright throughout; a perfect swing-up that holds scores about 0.8–0.9 because
the first ~40 steps swing the pole up from hanging).

Outputs in ``out/<setting>/``: ``steps.csv`` (one row per step), ``trials.csv`` (one row per
trial and run), ``summary.csv`` (the claims of the paper, measured), ``cartpole_<setting>.png``
and the per-run files of the resumable sweep under ``runs/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bam_rl.harness.files import write_frame
from bam_rl.harness.plotting import new_figure, plot_band, save_figure

#: Settings: the environment id and the methods, ``label -> (agent name, agent kwargs)``.
SETTINGS: dict[str, dict[str, Any]] = {
    "episodic": {
        "env_id": "bam_rl/GravityCartPoleEpisodic-v0",
        "methods": {
            "bam": ("mppi-bam", {"announced": True}),
            "recursive": ("mppi-recursive", {}),
            "gt": ("mppi-gt", {}),
        },
    },
    "continual": {
        "env_id": "bam_rl/GravityCartPoleContinual-v0",
        "methods": {
            "bam": ("mppi-bam", {"announced": False}),
            "bam_bocd": ("mppi-bam-bocd", {}),
            "bocd": ("mppi-bocd", {}),
        },
    },
}
LABELS = {"bam": "BAM", "recursive": "Recursive Bayes", "gt": "GT MPC (true simulator)",
          "bam_bocd": "BAM + BOCD", "bocd": "BOCD"}
STYLES = {"bam": {"color": "C3", "linestyle": "-"},
          "recursive": {"color": "C0", "linestyle": "--"},
          "gt": {"color": "black", "linestyle": ":"},
          "bam_bocd": {"color": "C2", "linestyle": "-."},
          "bocd": {"color": "C1", "linestyle": "--"}}
TRIAL_STEPS = 200
TRIALS_PER_EPISODE = 15
#: ``--quick``: two trials per gravity and a short planner, for smoke tests.
QUICK_SCHEDULES = {"episodic": (9.81, 9.81, 3.72, 3.72, 9.81, 9.81),
                   "continual": (9.81, 9.81, 3.72, 3.72, 9.81, 9.81)}
QUICK_PLANNER = {"horizon": 10, "n_samples": 8}


def schedule(setting: str, quick: bool = False) -> tuple[float, ...]:
    """The gravity of every trial of a setting (the registered schedule, or the quick one)."""
    import envs

    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {sorted(SETTINGS)}, got {setting!r}")
    if quick:
        return QUICK_SCHEDULES[setting]
    return envs.EPISODIC_SCHEDULE if setting == "episodic" else envs.CONTINUAL_SCHEDULE


def episode_starts(gravities: Any) -> np.ndarray:
    """Indices of the trials at which the gravity changes (an episode starts), 0 first."""
    gravities = np.asarray(gravities, dtype=np.float64)
    return np.flatnonzero(np.r_[True, gravities[1:] != gravities[:-1]])


def cartpole_grid(setting: str, seeds: int, quick: bool = False) -> list[Any]:
    """The sweep of one setting: every method × ``seeds`` seeds over the whole schedule.

    The ground-truth planner (``gt``) is a reference that does not learn, and at ~25 ms per
    control step (3,200 simulator steps) it is the costliest method: it runs the *first* trial
    of every episode only, under the same environment seed.
    """
    from bam_rl.harness import make_grid

    gravities = schedule(setting, quick)
    spec = SETTINGS[setting]
    methods = {label: (name, dict(kwargs)) for label, (name, kwargs) in spec["methods"].items()}
    if quick:
        methods = {label: (name, {**kwargs, **QUICK_PLANNER})
                   for label, (name, kwargs) in methods.items()}
    reference = {label: methods.pop(label) for label in list(methods) if label == "gt"}
    env_kwargs: dict[str, Any] = {"gravity_schedule": gravities} if quick else {}
    grid = make_grid(methods, {setting: (spec["env_id"], env_kwargs)}, seeds=seeds,
                     n_episodes=len(gravities))
    if reference:
        firsts = tuple(gravities[i] for i in episode_starts(gravities))
        grid += make_grid(reference, {setting: (spec["env_id"], {"gravity_schedule": firsts})},
                          seeds=seeds, n_episodes=len(firsts))
    return grid


def per_trial(steps: pd.DataFrame, gravities: Any) -> pd.DataFrame:
    """One row per (method, seed, trial): mean reward, gravity, selections so far; the
    reference's trials (the first of each episode) are placed at their episode's start."""
    frame = steps.copy()
    frame["trial"] = frame["episode"]
    is_reference = frame["method"] == "gt"
    starts = episode_starts(gravities)
    frame.loc[is_reference, "trial"] = starts[frame.loc[is_reference, "episode"].to_numpy()]
    aggregations: dict[str, Any] = {"reward": ("reward", "mean"), "gravity": ("gravity", "first"),
                                    "steps": ("reward", "size")}
    for column in ("belief_n_selections", "belief_readout_size", "belief_readout_same_gravity"):
        if column in frame:
            aggregations[column.removeprefix("belief_")] = (column, "last")
    trials = frame.groupby(["method", "seed_index", "trial"], sort=True).agg(**aggregations)
    return trials.reset_index()


def _recovery(curve: np.ndarray, target: float) -> int:
    """Trials (1-based) until the median reward first reaches ``target`` (len + 1 if never)."""
    hits = np.flatnonzero(curve >= target)
    return int(hits[0]) + 1 if hits.size else len(curve) + 1


def summarize(trials: pd.DataFrame, setting: str) -> pd.DataFrame:
    """Per episode (a run of trials at one gravity) and method: the median over seeds of the
    first trial's reward and of the episode's last five trials; ``recovery_trials``, the trials
    until the median reaches 90 % of the episode's reference (GT MPC's median where it runs,
    else the best method's last-five level; the episode's length + 1 if never); whether the
    gravity was seen before; and, per method, the readout selections a run made (median over
    seeds)."""
    medians = trials.groupby(["method", "trial"])["reward"].median().unstack("method")
    gravity = trials.groupby("trial")["gravity"].first()
    starts = list(episode_starts(gravity.to_numpy())) + [len(gravity)]
    rows = []
    seen: set[float] = set()
    for episode, (start, stop) in enumerate(zip(starts[:-1], starts[1:], strict=True)):
        g = float(gravity.iloc[start])
        block = medians.iloc[start:stop]
        learned = block.drop(columns="gt", errors="ignore")
        reference = (float(block["gt"].iloc[0]) if "gt" in block
                     else float(learned.iloc[-5:].mean().max()))
        target = reference - 0.1 * abs(reference)
        for method in block.columns:
            curve = block[method].dropna().to_numpy()
            rows.append({
                "setting": setting, "episode": episode, "gravity": g, "revisit": g in seen,
                "method": method, "first_trial": float(curve[0]),
                "last_five": float(np.mean(curve[-5:])), "recovery_trials": _recovery(curve, target),
            })
        seen.add(g)
    summary = pd.DataFrame(rows)
    if "n_selections" in trials:
        last = trials.sort_values("trial").groupby(["method", "seed_index"])["n_selections"].last()
        selections = last.groupby("method").median()
        summary["selections"] = summary["method"].map(selections)
    return summary


def plot_cartpole(trials: pd.DataFrame, setting: str, path: str | Path | None = None) -> Any:
    """Reward per trial (median over seeds, 10–90 % bands) with the gravity of each trial."""
    figure, (top, bottom) = new_figure(2, 1, figsize=(11, 6), sharex=True,
                                       gridspec_kw={"height_ratios": [3, 1]})
    gravity = trials.groupby("trial")["gravity"].first()
    starts = episode_starts(gravity.to_numpy())
    ends = np.r_[starts[1:], len(gravity)] - 1
    for method, runs in trials.groupby("method", sort=False):
        label = LABELS.get(str(method), str(method))
        style = STYLES.get(str(method), {})
        if method == "gt":  # the reference's first trial of each episode, drawn across it
            median = runs.groupby("trial")["reward"].median()
            for i, (start, end) in enumerate(zip(starts, ends, strict=True)):
                top.hlines(median.get(start, np.nan), start, end, lw=1.5,
                           label=label if i == 0 else None, **style)
            continue
        plot_band(top, runs.groupby("trial")["reward"], label, **style)
    for start in starts[1:]:
        for axis in (top, bottom):
            axis.axvline(start - 0.5, color="grey", lw=0.8, alpha=0.6)
    bottom.step(gravity.index, gravity.to_numpy(), where="mid", color="black")
    bottom.set(xlabel="trial", ylabel="gravity (m/s²)")
    title = ("episodic: changes announced" if setting == "episodic"
             else "continual: changes not announced")
    top.set(ylabel="mean cos(angle) per trial", ylim=(-1.05, 1.05),
            title=f"Cart-pole swing-up, {title} (median over seeds, 10–90 % bands)")
    top.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9)
    return save_figure(figure, path)


def run_setting(setting: str, out: str | Path, seeds: int = 5, quick: bool = False,
                n_jobs: int = 1, backend: str | None = None, progress: bool = True
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Runs one setting (resumable under ``out/runs``); returns (per-trial rows, summary)."""
    from bam_rl.harness import run_many

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    grid = cartpole_grid(setting, seeds, quick)
    backend = backend or ("serial" if n_jobs == 1 else "loky")
    steps = run_many(grid, backend=backend, n_jobs=n_jobs, out_dir=out / "runs",
                     progress=progress)
    trials = per_trial(steps, schedule(setting, quick))
    summary = summarize(trials, setting)
    columns = [c for c in ("method", "seed_index", "episode", "episode_step", "action", "reward",
                           "gravity", "trial", "context_changed") if c in steps]
    write_frame(steps[columns], out / "steps.csv")
    write_frame(trials, out / "trials.csv")
    write_frame(summary, out / "summary.csv")
    plot_cartpole(trials, setting, out / f"cartpole_{setting}.png")
    return trials, summary


def reproduce(out: str | Path, seeds: int | None = None, quick: bool = False, n_jobs: int = 1,
              progress: bool = True, setting: str = "episodic", backend: str | None = None
              ) -> pd.DataFrame:
    """Runs one setting of Experiment 2 (5 seeds; ``quick``: 1 seed, 6 short trials).

    Args:
        out: Output directory.
        seeds: Seeds per method (paper: 5).
        quick: Two trials per gravity, a short planner (horizon 10, 8 samples), one seed.
        n_jobs: Parallel workers.
        progress: Show a progress bar over runs.
        setting: ``"episodic"`` or ``"continual"``.
        backend: ``"serial"``, ``"loky"`` or ``"ray"`` (default: serial for one job, else loky).
    """
    seeds = seeds if seeds is not None else (1 if quick else 5)
    _, summary = run_setting(setting, out, seeds=seeds, quick=quick, n_jobs=n_jobs,
                             backend=backend, progress=progress)
    return summary


def reproduce_episodic(out: str | Path, **kwargs: Any) -> pd.DataFrame:
    """``bam-rl reproduce cartpole-episodic`` (see :func:`reproduce`)."""
    return reproduce(out, setting="episodic", **kwargs)


def reproduce_continual(out: str | Path, **kwargs: Any) -> pd.DataFrame:
    """``bam-rl reproduce cartpole-continual`` (see :func:`reproduce`)."""
    return reproduce(out, setting="continual", **kwargs)
