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

Outputs in ``out/<setting>/``: ``segments.txt`` (segment BAM's numbers, beyond the paper:
:mod:`~bam_rl.experiments.cartpole_segments`), ``steps.csv`` (one row per step),
``trials.csv`` (one row per trial and run), ``summary.csv`` (the claims of the paper,
measured), ``cartpole_<setting>.png`` and the per-run files of the resumable sweep under
``runs/``.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bam_rl import experiments
from bam_rl.experiments.cartpole_segments import CLAIMS as SEGMENT_CLAIMS
from bam_rl.experiments.cartpole_segments import (
    PAPER_MODEL,
    SWEEP,
    episode_starts,
    gt_at_981,
    write_report,
)
from bam_rl.experiments.cartpole_segments import claims as segment_claims
from bam_rl.experiments.options import RunOptions, reproduction, sweep_backend
from bam_rl.harness import naming, plotting
from bam_rl.harness.files import write_frame
from bam_rl.harness.registry import SEGMENT_MODEL_OPTIONS, SEGMENT_READOUT_AFTER_STEPS

#: The learned models' planning dtype, named in every run's options so that a run's file key
#: (a digest of its options) changes with it and a resumed sweep never mixes dtypes.
PLANNING = {"planning_dtype": "float32"}
#: segment BAM's in-trial readout steps (its registered default; issue 22's sweep)
SEGMENT_STEPS = SEGMENT_READOUT_AFTER_STEPS
#: segment BAM's options in the reproductions: its registered defaults, named so that its run
#: files' keys change with them (features blind to the cart position, mean-model planning)
SEGMENT_OPTIONS = {"readout_after_steps": SEGMENT_STEPS, **SEGMENT_MODEL_OPTIONS, **PLANNING}
#: Settings: the environment id and the methods, ``label -> (agent name, agent kwargs)``.
SETTINGS: dict[str, dict[str, Any]] = {
    "episodic": {
        "env_id": "bam_rl/GravityCartPoleEpisodic-v0",
        "methods": {
            "bam": ("mppi-bam", {"announced": True, **PLANNING}),
            "recursive": ("mppi-recursive", {**PLANNING}),
            "gt": ("mppi-gt", {}),
            # beyond the paper: readout tied within segments, read out in the first trial
            "bam_segments": (
                "mppi-bam-segments",
                {"announced": True, **SEGMENT_OPTIONS},
            ),
        },
    },
    "continual": {
        "env_id": "bam_rl/GravityCartPoleContinual-v0",
        "methods": {
            "bam": ("mppi-bam", {"announced": False, **PLANNING}),
            "bam_bocd": ("mppi-bam-bocd", {**PLANNING}),
            "bocd": ("mppi-bocd", {**PLANNING}),
            # beyond the paper: BOCD over trials closes segments; readout over whole segments
            # against the first 5 steps of the trial at which a change is detected
            "bam_segments": (
                "mppi-bam-segments",
                {"announced": False, **SEGMENT_OPTIONS},
            ),
        },
    },
}
#: Plain-text labels and line styles, from the naming table (:mod:`bam_rl.harness.naming`).
LABELS = {key: entry.label for key, entry in naming.methods("cartpole").items()}
STYLES = {key: entry.style() for key, entry in naming.methods("cartpole").items()}
#: Quantiles of the figure's bands (as in the paper).
QUANTILES = (0.1, 0.9)
TRIAL_STEPS = 200
TRIALS_PER_EPISODE = 15
#: ``--quick``: two trials per gravity and a short planner, for smoke tests.
QUICK_SCHEDULES = {
    "episodic": (9.81, 9.81, 3.72, 3.72, 9.81, 9.81),
    "continual": (9.81, 9.81, 3.72, 3.72, 9.81, 9.81),
}
QUICK_PLANNER = {"horizon": 10, "n_samples": 8}


def schedule(setting: str, quick: bool = False) -> tuple[float, ...]:
    """The gravity of every trial of a setting (the registered schedule, or the quick one)."""
    from bam_rl import envs

    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {sorted(SETTINGS)}, got {setting!r}")
    if quick:
        return QUICK_SCHEDULES[setting]
    return envs.EPISODIC_SCHEDULE if setting == "episodic" else envs.CONTINUAL_SCHEDULE


def cartpole_grid(setting: str, seeds: int, quick: bool = False) -> list[Any]:
    """The sweep of one setting: every method × ``seeds`` seeds over the whole schedule.

    The ground-truth planner (``gt``) is a reference that does not learn, and at ~25 ms per
    control step (3,200 simulator steps) it is the costliest method: it runs the *first* trial
    of every episode only, with the same environment seed (its k-th trial draws the k-th
    initial state of that seed, so only the first episode's start state is the learners').
    """
    from bam_rl.harness import make_grid

    gravities = schedule(setting, quick)
    spec = SETTINGS[setting]
    methods = {label: (name, dict(kwargs)) for label, (name, kwargs) in spec["methods"].items()}
    if quick:
        methods = {
            label: (name, {**kwargs, **QUICK_PLANNER}) for label, (name, kwargs) in methods.items()
        }
    reference = {label: methods.pop(label) for label in list(methods) if label == "gt"}
    env_kwargs: dict[str, Any] = {"gravity_schedule": gravities} if quick else {}
    grid = make_grid(
        methods, {setting: (spec["env_id"], env_kwargs)}, seeds=seeds, n_episodes=len(gravities)
    )
    if reference:
        grid += reference_grid(setting, reference, seeds, gravities)
    return grid


def reference_grid(
    setting: str,
    reference: dict[str, tuple[str, dict[str, Any]]],
    seeds: int,
    gravities: Any,
    root_seed: int = 0,
) -> list[Any]:
    """The GT MPC reference's runs: the first trial of every episode of ``gravities`` only
    (see :func:`cartpole_grid`)."""
    from bam_rl.harness import make_grid

    firsts = tuple(gravities[i] for i in episode_starts(gravities))
    env = (SETTINGS[setting]["env_id"], {"gravity_schedule": firsts})
    return make_grid(
        reference, {setting: env}, seeds=seeds, n_episodes=len(firsts), root_seed=root_seed
    )


def per_trial(steps: pd.DataFrame, gravities: Any) -> pd.DataFrame:
    """One row per (method, seed, trial): mean reward, gravity, selections so far; the
    reference's trials (the first of each episode) are placed at their episode's start."""
    frame = steps.copy()
    frame["trial"] = frame["episode"]
    is_reference = frame["method"] == "gt"
    starts = episode_starts(gravities)
    frame.loc[is_reference, "trial"] = starts[frame.loc[is_reference, "episode"].to_numpy()]
    aggregations: dict[str, Any] = {
        "reward": ("reward", "mean"),
        "gravity": ("gravity", "first"),
        "steps": ("reward", "size"),
    }
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
    for episode, (start, stop) in enumerate(itertools.pairwise(starts)):
        g = float(gravity.iloc[start])
        block = medians.iloc[start:stop]
        learned = block.drop(columns="gt", errors="ignore")
        reference = (
            float(block["gt"].iloc[0]) if "gt" in block else float(learned.iloc[-5:].mean().max())
        )
        target = reference - 0.1 * abs(reference)
        for method in block.columns:
            curve = block[method].dropna().to_numpy()
            rows.append(
                {
                    "setting": setting,
                    "episode": episode,
                    "gravity": g,
                    "revisit": g in seen,
                    "method": method,
                    "first_trial": float(curve[0]),
                    "last_five": float(np.mean(curve[-5:])),
                    "recovery_trials": _recovery(curve, target),
                }
            )
        seen.add(g)
    summary = pd.DataFrame(rows)
    if "n_selections" in trials:
        last = trials.sort_values("trial").groupby(["method", "seed_index"])["n_selections"].last()
        selections = last.groupby("method").median()
        summary["selections"] = summary["method"].map(selections)
    return summary


def plot_cartpole(trials: pd.DataFrame, setting: str, path: str | Path | None = None) -> Any:
    """Reward per trial (median over seeds, 10–90 % bands) with the gravity of each trial."""
    figure, (top, bottom) = plotting.new_figure(
        2, 1, figsize=(11, 6), sharex=True, gridspec_kw={"height_ratios": [3, 1]}
    )
    gravity = trials.groupby("trial")["gravity"].first()
    starts = episode_starts(gravity.to_numpy())
    ends = np.r_[starts[1:], len(gravity)] - 1
    present = list(trials["method"].unique())
    keys = [k for k in naming.methods("cartpole") if k in present]
    keys += [k for k in present if k not in keys]
    for method in keys:
        runs = trials[trials["method"] == method]
        entry = naming.method("cartpole", str(method))
        if method == "gt":  # the reference's first trial of each episode, drawn across it
            median = runs.groupby("trial")["reward"].median()
            for i, (start, end) in enumerate(zip(starts, ends, strict=True)):
                top.hlines(
                    median.get(start, np.nan),
                    start,
                    end,
                    label=entry.legend if i == 0 else None,
                    **entry.style(),
                )
            continue
        plotting.plot_band(
            top, runs.groupby("trial")["reward"], entry.legend, quantiles=QUANTILES, **entry.style()
        )
    for start in starts[1:]:
        for axis in (top, bottom):
            axis.axvline(start - 0.5, color="grey", lw=0.8, alpha=0.6)
    bottom.step(gravity.index, gravity.to_numpy(), where="mid", color="black")
    bottom.set(xlabel="trial", ylabel="gravity $g$ (m/s$^2$)")
    title = (
        "episodic: changes announced"
        if setting == "episodic"
        else "continual: changes not announced"
    )
    seeds = trials["seed_index"].nunique() if "seed_index" in trials else 1
    top.set(
        ylabel=r"mean $\cos(\mathrm{pole\ angle})$ per trial",
        ylim=(-1.05, 1.05),
        title=f"Experiment 2: cart-pole swing-up, {title}",
    )
    plotting.figure_legend(figure, [top])
    plotting.add_caption(
        figure,
        f"{plotting.band_note(QUANTILES)} ({plotting.count_text(seeds, 'seed')}); grey "
        "vertical lines: gravity changes"
        + (
            "; GT MPC runs the first trial of each episode and is drawn across it"
            if "gt" in keys
            else ""
        )
        + f". {naming.abbreviation_note('cartpole', keys)}.",
        width=140,
    )
    return plotting.save_figure(figure, path)


def run_setting(
    setting: str,
    out: str | Path,
    seeds: int = 5,
    quick: bool = False,
    n_jobs: int = 1,
    backend: str | None = None,
    progress: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Runs one setting (resumable under ``out/runs``); returns (per-trial rows, summary)."""
    from bam_rl.harness import run_many

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    grid = cartpole_grid(setting, seeds, quick)
    steps = run_many(
        grid,
        backend=sweep_backend(backend, n_jobs),
        n_jobs=n_jobs,
        out_dir=out / "runs",
        progress=progress,
    )
    trials = per_trial(steps, schedule(setting, quick))
    summary = summarize(trials, setting)
    columns = [
        c
        for c in (
            "method",
            "seed_index",
            "episode",
            "episode_step",
            "action",
            "reward",
            "gravity",
            "trial",
            "context_changed",
        )
        if c in steps
    ]
    write_frame(steps[columns], out / "steps.csv")
    write_frame(trials, out / "trials.csv")
    write_report(setting, trials, steps, out)  # beyond the paper: segment BAM's numbers
    summary = plotting.write_summary(
        quick,
        summary,
        out / "summary.csv",
        draw=lambda: plot_cartpole(trials, setting, out / f"cartpole_{setting}.png"),
    )
    return trials, summary


def sweep_grid(seeds: int, variants: dict[str, Any] | None = None) -> list[Any]:
    """The runs of :func:`segment_sweep` (their keys name the files under ``out/runs``)."""
    from bam_rl.harness import make_grid

    variants = SWEEP if variants is None else variants
    methods = {
        label: (
            "mppi-bam-segments",
            {
                "announced": True,
                **PLANNING,
                **PAPER_MODEL,
                **(dict(k) if isinstance(k, dict) else {"readout_after_steps": k}),
            },
        )
        for label, k in variants.items()
    }
    spec = SETTINGS["episodic"]
    gravities = schedule("episodic")
    return make_grid(
        methods, {"episodic": (spec["env_id"], {})}, seeds=seeds, n_episodes=len(gravities)
    )


def _quiet_runs(grid: list[Any], out: Path, jobs: int) -> pd.DataFrame:
    """The step rows of ``grid``'s runs (resumable under ``out/runs``, no progress bar): the
    sweeps of the analyses beyond the paper."""
    from bam_rl.harness import run_many

    return run_many(
        grid, backend=sweep_backend(None, jobs), n_jobs=jobs, out_dir=out / "runs", progress=False
    )


def segment_sweep(
    out: Path, seeds: int, jobs: int, variants: dict[str, Any] | None = None
) -> pd.DataFrame:
    """Runs segment BAM's variants on the episodic schedule, resumable under ``out/runs``;
    returns their per-trial rows (also ``out/trials.csv``).

    ``variants`` maps a label to ``readout_after_steps`` or to a dict of ``mppi-bam-segments``
    keyword arguments (e.g. ``{"readout_after_steps": (5, 10, 25), "n_features": 400}``), both
    over the paper's model (:data:`~bam_rl.experiments.cartpole_segments.PAPER_MODEL`,
    not the registered default's); default
    :data:`~bam_rl.experiments.cartpole_segments.SWEEP`.
    """
    grid = sweep_grid(seeds, variants)
    steps = _quiet_runs(grid, out, jobs)
    trials = per_trial(steps, schedule("episodic"))
    for column in ("belief_in_trial_readout_same_gravity",):
        if column in steps:
            last = steps.groupby(["method", "seed_index", "episode"])[column].last()
            trials[column.removeprefix("belief_")] = last.to_numpy()
    write_frame(trials, out / "trials.csv")
    return trials


def gt_resample(out: Path, seeds: int, jobs: int, root_seed: int = 1) -> pd.DataFrame:
    """A second, independent GT MPC sample of the first trial of every episode of the episodic
    schedule (another root seed: other planner draws, start states from the same ±0.05), as
    the reproduction runs its ``gt`` rows; resumable under ``out/runs``. Returns per-trial rows
    (``seed_index``, ``trial``, ``reward``) placed at their episode's start, for comparing GT
    MPC with itself (:func:`~bam_rl.experiments.cartpole_segments.gt_self_lines`)."""
    gravities = schedule("episodic")
    reference = {"gt": SETTINGS["episodic"]["methods"]["gt"]}
    grid = reference_grid("episodic", reference, seeds, gravities, root_seed)
    steps = _quiet_runs(grid, out, jobs)
    return per_trial(steps, gravities)[["seed_index", "trial", "reward"]]


@reproduction(default_seeds=5, quick_seeds=1)
def reproduce(
    options: RunOptions, setting: str = "episodic", backend: str | None = None
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
    _, summary = run_setting(
        setting,
        options.out,
        seeds=options.seeds,
        quick=options.quick,
        n_jobs=options.n_jobs,
        backend=backend,
        progress=options.progress,
    )
    return summary


def reproduce_episodic(out: str | Path, **kwargs: Any) -> pd.DataFrame:
    """``bam-rl reproduce cartpole-episodic`` (see :func:`reproduce`)."""
    return reproduce(out, setting="episodic", **kwargs)


def reproduce_continual(out: str | Path, **kwargs: Any) -> pd.DataFrame:
    """``bam-rl reproduce cartpole-continual`` (see :func:`reproduce`)."""
    return reproduce(out, setting="continual", **kwargs)


#: The paper's claims of §4.2, per setting, in order (the rows of the report's claim table).
CLAIMS: dict[str, tuple[str, ...]] = {
    "episodic": (
        "The first time BAM meets a new planet it starts from the base prior and learns like "
        "recursive Bayes.",
        "On a revisited planet BAM leverages its past trials to adapt quickly and recover high "
        "performance (within 90 % of GT MPC by the trial after its readout).",
        "Recursive Bayes starts from scratch on a revisit and again needs multiple trials.",
    ),
    "continual": (
        "Initially all methods perform similarly, until BAM meets an environment it has seen "
        "before.",
        "Without BAM, BOCD relearns from the base prior after a change, with significant dips "
        "in reward on a revisited gravity.",
        "Using past information, BAM and BAM + BOCD adapt to a revisited gravity more quickly "
        "than BOCD.",
        "BAM and BAM + BOCD perform very similarly.",
        "BAM + BOCD optimises the readout only at detected changes (≈ 5 times vs 60 for BAM).",
    ),
}
_SECTION = {"episodic": "§4.2.1", "continual": "§4.2.2"}


def _episodes(trials: pd.DataFrame) -> tuple[pd.DataFrame, list[tuple[int, int, bool]]]:
    """Median reward per (trial, method) and the episodes as (start, stop, revisit)."""
    medians = trials.groupby(["trial", "method"])["reward"].median().unstack("method")
    gravity = trials.groupby("trial")["gravity"].first()
    starts = list(episode_starts(gravity.to_numpy())) + [len(gravity)]
    seen: set[float] = set()
    episodes = []
    for start, stop in itertools.pairwise(starts):
        g = float(gravity.iloc[start])
        episodes.append((start, stop, g in seen))
        seen.add(g)
    return medians, episodes


def claims(folder: str | Path | None, setting: str = "episodic") -> list[dict[str, str]]:
    """The claims of §4.2 for one setting, measured from ``folder/trials.csv`` and
    ``folder/summary.csv`` (``None`` or missing files: "not run"), then segment BAM's
    (beyond the paper: :func:`~bam_rl.experiments.cartpole_segments.claims`)."""
    from bam_rl.experiments.report import claim
    from bam_rl.experiments.report import not_run as paper_not_run

    name, section, texts = f"cartpole-{setting}", _SECTION[setting], CLAIMS[setting]

    def not_run(name: str, section: str, texts: Any, reason: str = "not run") -> list[dict]:
        # segment BAM's rows (beyond the paper) follow the paper's, run or not
        beyond = paper_not_run(name, "beyond", SEGMENT_CLAIMS[setting], reason)
        return paper_not_run(name, section, texts, reason) + beyond

    if (
        folder is None
        or not (Path(folder) / "trials.csv").exists()
        or not (Path(folder) / "summary.csv").exists()
    ):
        return not_run(name, section, texts)
    trials = pd.read_csv(Path(folder) / "trials.csv")
    summary = pd.read_csv(Path(folder) / "summary.csv")
    medians, episodes = _episodes(trials)
    revisits = summary[summary["revisit"].astype(bool)]
    if setting == "episodic":
        needed = {"bam", "recursive"}
        if not needed <= set(medians.columns):
            return not_run(name, section, texts, "incomplete")
        firsts = [(start, stop) for start, stop, revisit in episodes if not revisit]
        gaps = [
            abs(medians["bam"].iloc[a:b].mean() - medians["recursive"].iloc[a:b].mean())
            for a, b in firsts
        ]
        recovery = revisits.groupby("method")["recovery_trials"].apply(list)
        bam = recovery.get("bam", [])
        rec = recovery.get("recursive", [])
        reference = "GT MPC" if "gt" in set(summary["method"]) else "the best method"
        beyond = _segment_rows(name, trials, "episodic")
        return [
            claim(
                name,
                section,
                texts[0],
                "mean |BAM − recursive| of the episode's median reward on first visits: "
                + ", ".join(f"{gap:.2f}" for gap in gaps)
                + " (holds if all ≤ 0.1)",
                bool(gaps) and max(gaps) <= 0.1,
            ),
            claim(
                name,
                section,
                texts[1],
                f"trials until BAM reaches 90 % of {reference} on revisits: "
                + (", ".join(str(int(t)) for t in bam) or "no revisit"),
                (bool(bam) and max(bam) <= 2) if bam else None,
            ),
            claim(
                name,
                section,
                texts[2],
                "trials until recursive Bayes reaches it on revisits: "
                + (", ".join(str(int(t)) for t in rec) or "no revisit")
                + f" (BAM: {', '.join(str(int(t)) for t in bam)})",
                (min(rec) > 2 and all(r > b for r, b in zip(rec, bam, strict=False)))
                if rec and bam
                else None,
            ),
            *beyond,
        ]
    needed = {"bam", "bam_bocd", "bocd"}
    if not needed <= set(medians.columns):
        return not_run(name, section, texts, "incomplete")
    start, stop, _ = episodes[0]
    first = medians.iloc[start:stop][sorted(needed)].mean()
    spread = float(first.max() - first.min())
    revisit_blocks = [(a, b) for a, b, revisit in episodes if revisit]
    dips, faster = [], []
    for a, b in revisit_blocks:
        early = medians.iloc[a : min(a + 5, b)]
        dips.append(
            (
                float(early["bocd"].mean()),
                float(early["bam"].mean()),
                float(early["bam_bocd"].mean()),
            )
        )
    recovery = revisits.groupby("method")["recovery_trials"].apply(list)
    for bam_t, both_t, bocd_t in zip(
        recovery.get("bam", []),
        recovery.get("bam_bocd", []),
        recovery.get("bocd", []),
        strict=False,
    ):
        faster.append((bam_t, both_t, bocd_t))
    difference = float((medians["bam"] - medians["bam_bocd"]).abs().mean())
    selections = (
        summary.groupby("method")["selections"].first()
        if "selections" in summary
        else pd.Series(dtype=float)
    )
    faster_ok = [b < c and m < c for m, b, c in faster]
    episodic = Path(folder).parent / "cartpole-episodic" / "trials.csv"
    gt_981 = gt_at_981(pd.read_csv(episodic)) if episodic.exists() else None
    beyond = _segment_rows(name, trials, "continual", gt_981)
    return [
        claim(
            name,
            section,
            texts[0],
            "first episode's mean median reward: "
            + ", ".join(f"{LABELS[m]} {first[m]:.2f}" for m in sorted(needed))
            + f" (spread {spread:.2f}; holds if ≤ 0.1)",
            spread <= 0.1,
        ),
        claim(
            name,
            section,
            texts[1],
            "; ".join(
                f"first 5 trials of the revisit: BOCD {d[0]:.2f} vs BAM {d[1]:.2f}, "
                f"BAM + BOCD {d[2]:.2f}"
                for d in dips
            )
            or "no revisit",
            all(d[0] < min(d[1], d[2]) - 0.1 for d in dips) if dips else None,
        ),
        claim(
            name,
            section,
            texts[2],
            "; ".join(
                f"trials to recover on the revisit: BAM {m}, BAM + BOCD {b}, BOCD {c}"
                for m, b, c in faster
            )
            or "no revisit",
            (True if all(faster_ok) else "partly" if any(faster_ok) else False) if faster else None,
        ),
        claim(
            name,
            section,
            texts[3],
            f"mean |BAM − BAM + BOCD| of the median reward per trial: {difference:.3f} "
            "(holds if ≤ 0.1)",
            difference <= 0.1,
        ),
        claim(
            name,
            section,
            texts[4],
            f"readout selections per run (median): BAM {selections.get('bam', np.nan):.0f}, "
            f"BAM + BOCD {selections.get('bam_bocd', np.nan):.0f}",
            bool(selections.get("bam_bocd", np.inf) <= selections.get("bam", 0) / 4)
            if len(selections)
            else None,
        ),
        *beyond,
    ]


def _segment_rows(
    name: str, trials: pd.DataFrame, setting: str, gt_981: float | None = None
) -> list[dict[str, str]]:
    """Segment BAM's rows (beyond the paper); one that cannot be measured is "not run" and
    leaves the paper's rows of the folder as they are."""
    from bam_rl.experiments.report import not_run

    try:
        return segment_claims(trials, setting, gt_981)
    except Exception as error:  # the folder's files: any failure is segment BAM's rows'
        reason = f"unreadable: {type(error).__name__}: {error}".splitlines()[0][:300]
        return not_run(name, "beyond", SEGMENT_CLAIMS[setting], reason)


def claims_episodic(folder: str | Path | None) -> list[dict[str, str]]:
    """The claims of §4.2.1 (see :func:`claims`)."""
    return claims(folder, "episodic")


def claims_continual(folder: str | Path | None) -> list[dict[str, str]]:
    """The claims of §4.2.2 (see :func:`claims`)."""
    return claims(folder, "continual")


def scale(folder: str | Path) -> str:
    """What ``folder/trials.csv`` holds, counted (the report's caption): seeds, trials and
    methods; ``""`` without the file."""

    def sentence(trials: pd.DataFrame) -> str:
        gt = " (GT MPC: first trials only)" if "gt" in set(trials["method"]) else ""
        return (
            f"{experiments.distinct(trials, seed_index='seed', trial='trial')} for each of "
            f"{experiments.distinct(trials, method='method')}{gt}."
        )

    return experiments.counted(folder, "trials.csv", ["method", "seed_index", "trial"], sentence)
