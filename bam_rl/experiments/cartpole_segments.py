"""Segment BAM on the cart-pole (beyond the paper): the numbers issue 22 asks for.

From the per-trial rows of ``bam-rl reproduce cartpole-episodic`` / ``cartpole-continual``
(and the runs' per-step ``belief_*`` columns), against the GT MPC reference of the same seed:

* episodic: the first and the second trial of each revisit (ratio to GT MPC; pairs at ≥ 0.7
  and within 10 %), trials until 90 % of GT MPC on first visits beside recursive Bayes', and
  the fraction of picked segments of the revisited gravity;
* continual: the trials after the return to 9.81 m/s² until a run reaches 90 % of GT MPC at
  9.81 (the episodic GT's median over seeds at 9.81; the continual setting runs no GT).

The reproductions write these lines to ``segments.txt`` (:func:`write_report`) and the same
bars as rows of the results report's claim table (:func:`claims`);
``scripts/experiments/segment_acceptance.py`` prints them for given folders and runs the sweep of
``readout_after_steps``, feature counts, prior precisions, the features' state inputs and the
planning rollouts (:data:`SWEEP`,
:func:`bam_rl.experiments.cartpole.segment_sweep`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bam_rl import hyperparams
from bam_rl._io import atomic_path
from bam_rl.harness import naming

#: The paper's dynamics model (App. D.1), which the sweep's older rows ran with.
PAPER_MODEL: dict[str, Any] = {
    "n_features": hyperparams.RFF_FEATURES,
    "prior_precision": hyperparams.BLR_PRIOR_PRECISION,
    "feature_states": None,
    "planning_models": "draws",
}
#: Sweep variants: label -> readout_after_steps (``None``: tied readout after trial 1 only)
#: with the paper's model (:data:`PAPER_MODEL`), or a dict of ``mppi-bam-segments`` keyword
#: arguments over that model. ``seg_mean_translation`` is the registered default, the
#: reproductions' ``bam_segments``; ``seg_k5_10_25`` was the default before it.
SWEEP: dict[str, Any] = {
    "seg_after_trial": None,
    "seg_k5": 5,
    "seg_k10": 10,
    "seg_k25": 25,
    "seg_k10_50": (10, 50),
    "seg_k5_15": (5, 15),
    "seg_k5_10_25": (5, 10, 25),
    "seg_k5_10_25_50": (5, 10, 25, 50),
    "seg_k5_10_25_100": (5, 10, 25, 100),
    # more random Fourier features than the paper's 200 (issue 22's "next idea") ...
    "seg_f300": {"readout_after_steps": (5, 10, 25), "n_features": 300},
    "seg_f400": {"readout_after_steps": (5, 10, 25), "n_features": 400},
    # ... and a prior on their weights that is not nearly flat (the paper's 1e-4 is a ridge
    # of 1e-10 at noise variance 1e-6): faster first visits, but not a better settled level
    # or second trial on held-out seeds (docs/experiments.md)
    "seg_f200_p100": {"readout_after_steps": (5, 10, 25), "prior_precision": 100.0},
    "seg_f400_p1": {"readout_after_steps": (5, 10, 25), "n_features": 400, "prior_precision": 1.0},
    "seg_f400_p100": {
        "readout_after_steps": (5, 10, 25),
        "n_features": 400,
        "prior_precision": 100.0,
    },
    # the planning belief refreshed with the trial's transitions every 10 steps (trials
    # without in-trial readouts): faster first visits, not more second trials
    "seg_refresh10": {"readout_after_steps": (5, 10, 25), "refresh_every_steps": 10},
    "seg_f400_p1e4": {
        "readout_after_steps": (5, 10, 25),
        "n_features": 400,
        "prior_precision": 1e4,
    },
    # features blind to the cart position (the rail is unlimited and frictionless, so the
    # dynamics do not depend on it): a ten times smaller held-out one-step error
    "seg_translation": {"readout_after_steps": (5, 10, 25), "feature_states": (1, 2, 3, 4)},
    # planning with the posterior mean model instead of one draw per trajectory
    "seg_mean": {"readout_after_steps": (5, 10, 25), "planning_models": "mean"},
    "seg_mean_translation": {
        "readout_after_steps": (5, 10, 25),
        "planning_models": "mean",
        "feature_states": (1, 2, 3, 4),
    },
}
FIRST_TRIAL_RATIO = 0.7
WITHIN = 0.9


def episode_starts(gravities: Any) -> np.ndarray:
    """Indices of the trials at which the gravity changes (an episode starts), 0 first."""
    gravities = np.asarray(gravities, dtype=np.float64)
    return np.flatnonzero(np.r_[True, gravities[1:] != gravities[:-1]])


def episode_stops(gravities: Any) -> dict[int, int]:
    """Each episode's first trial -> one past its last (from the trials' gravities)."""
    starts = [int(s) for s in episode_starts(gravities)]
    return dict(zip(starts, starts[1:] + [len(gravities)], strict=True))


def visit_starts(trials: pd.DataFrame) -> tuple[list[int], list[int]]:
    """The trials (ids) at which an episode starts on a gravity seen before (revisits) and on
    a new one (first visits), from any rows with ``trial`` and ``gravity``."""
    per_trial = trials.groupby("trial")["gravity"].first()
    gravity, trial_ids = per_trial.to_numpy(), per_trial.index.to_numpy()
    seen: set[float] = set()
    revisits: list[int] = []
    firsts: list[int] = []
    for start in episode_starts(gravity):
        (revisits if gravity[start] in seen else firsts).append(int(trial_ids[start]))
        seen.add(float(gravity[start]))
    return revisits, firsts


def run_files(folder: Path, label: str, keys: Any = None) -> list[Path]:
    """The run files of ``label`` under ``folder/runs`` (only those of ``keys``, run keys,
    when given), or ``ValueError`` when one seed has files of different options: a folder
    reused after a change of defaults keeps the older runs, and mixing them would be wrong."""

    def seed_of(path: Path) -> int:  # the run key's ``__s<seed index>__`` (-1: none)
        match = re.search(r"__s(\d+)__", path.name)
        return int(match.group(1)) if match else -1

    paths = sorted(
        (folder / "runs").glob(f"{label}__*.parquet"), key=lambda p: (seed_of(p), p.name)
    )
    if keys is not None:
        keys = set(keys)
        paths = [path for path in paths if path.name.removesuffix(".parquet") in keys]
    by_seed: dict[int | str, list[str]] = {}
    for path in paths:
        index = seed_of(path)
        by_seed.setdefault(index if index >= 0 else path.name, []).append(path.name)
    mixed = {seed: names for seed, names in by_seed.items() if len(names) > 1}
    if mixed:
        seed, names = next(iter(mixed.items()))
        raise ValueError(
            f"{folder / 'runs'} holds runs of {label!r} with different options for seed {seed} "
            f"({', '.join(names)}): pass the current run keys or remove the stale files"
        )
    return paths


def _runs_by_trial(
    folder: Path, label: str, keys: Any, reduce: Callable[[Any], pd.DataFrame]
) -> pd.DataFrame:
    """``reduce`` of each (seed, trial)'s step rows (a pandas groupby) in the run files of
    ``label`` found so far, one row per (seed, trial) with columns ``seed_index``, ``trial``
    and ``reduce``'s; an empty frame without files."""
    frames = [
        reduce(pd.read_parquet(path).groupby(["seed_index", "episode"]))
        .reset_index()
        .rename(columns={"episode": "trial"})
        for path in run_files(folder, label, keys)
    ]
    return pd.concat(frames) if frames else pd.DataFrame()


def runs_trials(folder: Path, label: str, keys: Any = None) -> pd.DataFrame:
    """Per-trial rows of one method from the run files found so far (a sweep under way; see
    :func:`run_files` for ``keys``)."""
    trials = _runs_by_trial(
        folder,
        label,
        keys,
        lambda trial: trial.agg(reward=("reward", "mean"), gravity=("gravity", "first")),
    )
    trials["method"] = label
    return trials


def runs_picks(folder: Path, label: str, keys: Any = None) -> pd.DataFrame:
    """Per (seed, trial) pick fractions of a segment method, from its run files (see
    :func:`run_files` for ``keys``)."""
    columns = ["belief_readout_same_gravity", "belief_in_trial_readout_same_gravity"]
    return _runs_by_trial(folder, label, keys, lambda trial: trial[columns].last())


def revisit_ratios(trials: pd.DataFrame, method: str) -> tuple[np.ndarray, np.ndarray]:
    """``method``'s first and second trial of every revisit over GT MPC's trial of that
    episode and seed (seed-major, revisits in order)."""
    gt = trials[trials["method"] == "gt"].set_index(["seed_index", "trial"])["reward"]
    reward = trials[trials["method"] == method].set_index(["seed_index", "trial"])["reward"]
    revisits, _ = visit_starts(trials)
    r1, r2 = [], []
    for seed in sorted(trials["seed_index"].unique()):
        for start in revisits:
            reference = gt[(seed, start)]
            r1.append(reward[(seed, start)] / reference)
            r2.append(reward[(seed, start + 1)] / reference)
    return np.array(r1), np.array(r2)


def first_visit_recovery(trials: pd.DataFrame, method: str) -> list[int]:
    """Trials until ``method``'s median over seeds reaches 90 % of GT MPC's median, on each
    first visit (the visit's length + 1 if never)."""
    gravity = trials.groupby("trial")["gravity"].first().to_numpy()
    stops = episode_stops(gravity)
    _, firsts = visit_starts(trials)
    medians = trials[trials["method"] == method].groupby("trial")["reward"].median()
    gt_median = trials[trials["method"] == "gt"].groupby("trial")["reward"].median()
    recovery = []
    for start in firsts:
        stop = stops[start]
        target = gt_median[start] - 0.1 * abs(gt_median[start])
        hits = np.flatnonzero(medians.iloc[start:stop].to_numpy() >= target)
        recovery.append(int(hits[0]) + 1 if hits.size else stop - start + 1)
    return recovery


def episodic_lines(
    trials: pd.DataFrame, methods: list[str], picks: pd.DataFrame | None
) -> list[str]:
    """The first and second trial of each revisit against GT MPC, first visits against
    recursive Bayes, and the readouts' picks on revisits, one line each."""
    lines: list[str] = []
    gravity = trials.groupby("trial")["gravity"].first().to_numpy()
    revisits, firsts = visit_starts(trials)
    seeds = sorted(trials["seed_index"].unique())
    lines.append(f"revisit starts {revisits}; first visits {firsts}; seeds {seeds}")
    for method in methods:
        if method not in set(trials["method"]):
            continue
        r1a, r2a = revisit_ratios(trials, method)
        lines.append(
            f"{method:16s} revisit trial 1: >= {FIRST_TRIAL_RATIO} x GT in "
            f"{(r1a >= FIRST_TRIAL_RATIO).sum()}/{r1a.size}, median ratio {np.median(r1a):.2f} "
            f"[{' '.join(f'{v:.2f}' for v in r1a)}]"
        )
        lines.append(
            f"{'':16s} revisit trial 2: within 10 % of GT in {(r2a >= WITHIN).sum()}/{r2a.size}, "
            f"median ratio {np.median(r2a):.2f} [{' '.join(f'{v:.2f}' for v in r2a)}]"
        )
        lines.append(
            f"{'':16s} first visits (g = {', '.join(f'{gravity[s]:g}' for s in firsts)}): trials "
            f"until 90 % of GT MPC (median curve) {first_visit_recovery(trials, method)}"
        )
    if picks is not None and len(picks):
        for column, trial_offset in (
            ("belief_in_trial_readout_same_gravity", 0),
            ("belief_readout_same_gravity", 0),
        ):
            rows = picks[picks["trial"].isin([s + trial_offset for s in revisits])]
            values = rows[column].to_numpy(dtype=float)
            lines.append(
                f"picks on revisits, {column.removeprefix('belief_')}: mean "
                f"{np.nanmean(values):.2f} over {np.isfinite(values).sum()} readouts "
                f"[{' '.join(f'{v:.2f}' for v in values)}]"
            )
    return lines


#: Trials at the end of a first visit taken as a learner's settled level (the first visits
#: reach 90 % of GT MPC after 6-10 of their 15 trials).
SETTLED_TRIALS = 5


def settled_lines(trials: pd.DataFrame, methods: list[str]) -> list[str]:
    """How often a learner's trial lands within 10 % of GT MPC once its model has settled:
    the last :data:`SETTLED_TRIALS` trials of every first visit and trials 2 onwards of every
    revisit, each against GT's trial of its episode (the trial-2 bar's ratio). A readout
    cannot lift trial 2 of a revisit above this rate: it is how often the planner passes the
    bar from a model that has every earlier trial of the gravity."""
    gravity = trials.groupby("trial")["gravity"].first().to_numpy()
    stops = episode_stops(gravity)
    revisits, firsts = visit_starts(trials)
    gt = trials[trials["method"] == "gt"].set_index(["seed_index", "trial"])["reward"]
    lines = []
    for method in methods:
        rows = trials[trials["method"] == method]
        if rows.empty:
            continue
        reward = rows.set_index(["seed_index", "trial"])["reward"]
        counts = {}
        for name, episodes, last_only in (
            ("first visits' last trials", firsts, True),
            ("revisits' trials 2+", revisits, False),
        ):
            ratios = []
            for seed in sorted(rows["seed_index"].unique()):
                for start in episodes:
                    stop = stops[start]
                    first = max(start, stop - SETTLED_TRIALS) if last_only else start + 1
                    ratios += [reward[(seed, t)] / gt[(seed, start)] for t in range(first, stop)]
            hits = np.array(ratios) >= WITHIN
            share = f" ({hits.mean():.0%})" if hits.size else ""
            counts[name] = f"{hits.sum()}/{hits.size}{share}"
        lines.append(
            f"{method:16s} settled, within 10 % of GT: "
            + "; ".join(f"{name} {count}" for name, count in counts.items())
        )
    return lines


def gt_self_lines(trials: pd.DataFrame, resample: pd.DataFrame) -> list[str]:
    """How often a second GT MPC sample (:func:`~bam_rl.experiments.cartpole.
    gt_resample`) lands within 10 % of the reproduction's GT on the revisits' first trials:
    the noise floor of the trial-2 bar, whose reference is one GT sample."""
    revisits, _ = visit_starts(trials)
    gt = trials[trials["method"] == "gt"][["seed_index", "trial", "reward"]]
    both = gt.merge(resample, on=["seed_index", "trial"], suffixes=("", "_again"))
    ratio = (both["reward_again"] / both["reward"]).to_numpy()
    on_revisits = ratio[both["trial"].isin(revisits).to_numpy()]
    return [
        f"GT MPC against a second GT sample: within 10 % on revisits in "
        f"{(on_revisits >= WITHIN).sum()}/{on_revisits.size}, on every episode's first trial in "
        f"{(ratio >= WITHIN).sum()}/{ratio.size} [{' '.join(f'{v:.2f}' for v in on_revisits)}]"
    ]


def continual_recovery(
    trials: pd.DataFrame, gt_981: float
) -> tuple[list[int], float, dict[str, tuple[list[int], int | None]]]:
    """The returns to 9.81 m/s², the target (90 % of ``gt_981``) and, per method, the trials
    after each return until a seed's run reaches it (per seed) and until the median curve
    does (``None``: never)."""
    gravity = trials.groupby("trial")["gravity"].first().to_numpy()
    starts = episode_starts(gravity)
    back = [int(s) for s in starts[1:] if gravity[s] == 9.81]
    target = gt_981 - 0.1 * abs(gt_981)
    recovery: dict[str, tuple[list[int], int | None]] = {}
    for method, runs in trials.groupby("method"):
        per_seed = []
        for _, run in runs.groupby("seed_index"):
            curve = run.set_index("trial")["reward"].sort_index().to_numpy()
            for start in back:
                stop = next((int(s) for s in starts if s > start), len(curve))
                hits = np.flatnonzero(curve[start:stop] >= target)
                per_seed.append(int(hits[0]) + 1 if hits.size else stop - start + 1)
        median_curve = runs.groupby("trial")["reward"].median().to_numpy()
        hits = np.flatnonzero(median_curve[back[0] :] >= target) if back else np.array([])
        recovery[str(method)] = (per_seed, int(hits[0]) + 1 if hits.size else None)
    return back, target, recovery


def continual_lines(trials: pd.DataFrame, gt_981: float) -> list[str]:
    """Trials after the return to 9.81 m/s² until 90 % of ``gt_981`` (GT MPC's median reward
    at 9.81 in the episodic run), per method and seed, one line each."""
    back, target, recovery = continual_recovery(trials, gt_981)
    lines = [f"continual: return to 9.81 at trial {back}; target 90 % of GT MPC = {target:.3f}"]
    for method, (per_seed, curve) in recovery.items():
        lines.append(
            f"{method:14s} trials after the change until 90 % of GT: per seed {per_seed}, "
            f"median {np.median(per_seed):.0f}; median curve "
            f"{curve if curve is not None else 'never'}"
        )
    return lines


#: The rows segment BAM adds to the claim table (beyond the paper; issue 22's bars).
CLAIMS = {
    "episodic": (
        "Beyond the paper: segment BAM's first trial on a revisited gravity reaches 0.7 × GT "
        "MPC in at least 80 % of (seed, revisit) pairs, with a median ratio of at least 0.8.",
        "Beyond the paper: segment BAM's second trial on a revisit lands within 10 % of GT MPC "
        "in at least 80 % of the pairs.",
        "Beyond the paper: on a first visit segment BAM needs no more trials to 90 % of GT MPC "
        "than recursive Bayes (with the paper's model and planner; segment BAM's model sees no "
        "cart position and plans with the posterior mean).",
    ),
    "continual": (
        "Beyond the paper: after the return to 9.81 m/s², segment BAM reaches 90 % of GT MPC "
        "within 2 trials (median over seeds).",
    ),
}
SHARE = 0.8  # 12 of 15 pairs


def claims(trials: pd.DataFrame, setting: str, gt_981: float | None = None) -> list[dict[str, str]]:
    """Segment BAM's rows of the claim table for one setting's per-trial rows ("not run"
    without segment BAM, or without GT MPC: the episodic run's, ``gt_981``, for continual)."""
    from bam_rl.experiments.report import claim, not_run

    name, texts = f"cartpole-{setting}", CLAIMS[setting]
    present = set(trials["method"])
    if "bam_segments" not in present:
        return not_run(name, "beyond", texts, "no segment BAM run")
    if setting == "continual":
        if gt_981 is None:
            return not_run(name, "beyond", texts, "needs the episodic run's GT MPC")
        _, target, recovery = continual_recovery(trials, gt_981)
        per_seed, _ = recovery["bam_segments"]
        # the paper's methods beside it (``bam`` is naive BAM here: no announcements)
        others = ", ".join(
            f"{naming.label('cartpole', m)} {np.median(t):g}"
            for m, (t, _) in recovery.items()
            if m in ("bam", "bam_bocd", "bocd")
        )
        return [
            claim(
                name,
                "beyond",
                texts[0],
                f"trials after the return until {target:.3f}: per seed "
                f"{', '.join(map(str, per_seed))}, median {np.median(per_seed):g}"
                + (f" ({others})" if others else ""),
                bool(np.median(per_seed) <= 2),
            )
        ]
    if not {"gt", "recursive"} <= present:
        return not_run(name, "beyond", texts, "needs GT MPC and recursive Bayes")
    r1, r2 = revisit_ratios(trials, "bam_segments")
    paper = revisit_ratios(trials, "bam") if "bam" in present else None
    ours, theirs = (
        first_visit_recovery(trials, "bam_segments"),
        first_visit_recovery(trials, "recursive"),
    )
    first, second = int((r1 >= FIRST_TRIAL_RATIO).sum()), int((r2 >= WITHIN).sum())
    return [
        claim(
            name,
            "beyond",
            texts[0],
            f"{first} of {r1.size} pairs, median ratio {np.median(r1):.2f}"
            + (f" (the paper's BAM {(paper[0] >= FIRST_TRIAL_RATIO).sum()})" if paper else ""),
            first >= SHARE * r1.size and float(np.median(r1)) >= 0.8,
        ),
        claim(
            name,
            "beyond",
            texts[1],
            f"{second} of {r2.size} pairs"
            + (f" (the paper's BAM {(paper[1] >= WITHIN).sum()})" if paper else ""),
            second >= SHARE * r2.size,
        ),
        claim(
            name,
            "beyond",
            texts[2],
            f"trials to 90 % of GT MPC per first visit: {', '.join(map(str, ours))}; recursive "
            f"Bayes {', '.join(map(str, theirs))}",
            all(a <= b for a, b in zip(ours, theirs, strict=True)),
        ),
    ]


#: Methods of the episodic report: the paper's BAM, recursive Bayes, segment BAM.
EPISODIC_METHODS = ["bam", "recursive", "bam_segments"]
_PICKS = ["belief_readout_same_gravity", "belief_in_trial_readout_same_gravity"]


def step_picks(steps: pd.DataFrame, method: str = "bam_segments") -> pd.DataFrame | None:
    """Per (seed, trial) pick fractions of ``method`` from a sweep's step rows (``None`` if the
    rows have no pick columns)."""
    rows = steps[steps["method"] == method]
    if rows.empty or not set(_PICKS) <= set(rows.columns):
        return None
    last = rows.groupby(["seed_index", "episode"])[_PICKS].last().reset_index()
    return last.rename(columns={"episode": "trial"})


def gt_at_981(episodic_trials: pd.DataFrame) -> float:
    """GT MPC's reward at 9.81 m/s² in the episodic run: the mean over its 9.81 trials of the
    median over seeds."""
    gt = episodic_trials[episodic_trials["method"] == "gt"]
    return float(gt[gt["gravity"] == 9.81].groupby("trial")["reward"].median().mean())


def write_report(
    setting: str, trials: pd.DataFrame, steps: pd.DataFrame, out: Path
) -> list[str] | None:
    """Writes ``out/segments.txt`` for a run with segment BAM (``None`` without it). The
    continual report needs the episodic run's GT MPC: ``out/../cartpole-episodic/trials.csv``
    (the layout of ``bam-rl reproduce all``)."""
    if "bam_segments" not in set(trials["method"]):
        return None
    if setting == "episodic":
        methods = [m for m in EPISODIC_METHODS if m in set(trials["method"])]
        lines = episodic_lines(trials, methods, step_picks(steps))
        lines += settled_lines(trials, methods)
    else:
        episodic = out.parent / "cartpole-episodic" / "trials.csv"
        if episodic.exists():
            lines = continual_lines(trials, gt_at_981(pd.read_csv(episodic)))
        else:
            lines = [f"continual: needs the episodic run's GT MPC in {episodic} (none there)"]
    with atomic_path(out / "segments.txt") as temporary:
        temporary.write_text("\n".join(lines) + "\n")
    return lines
