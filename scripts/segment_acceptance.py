"""Issue 22's acceptance numbers for ``mppi-bam-segments`` (beyond the paper), from the
outputs of ``bam-rl reproduce cartpole-episodic`` / ``cartpole-continual`` and a sweep of the
in-trial readout step ``k``.

* ``--sweep DIR`` runs the episodic schedule (5 seeds, resumable under ``DIR/runs``) for
  ``mppi-bam-segments`` with ``readout_after_steps`` in :data:`SWEEP` and writes
  ``DIR/trials.csv`` (one row per method, seed and trial).
* Then it prints, for every segment variant found in the episodic folders, against the GT MPC
  reference of the same seed (``mppi-gt`` runs the first trial of every episode):
  the first and the second trial of each revisit (ratio to GT MPC, pairs at ≥ 0.7 and within
  10 %), trials until 90 % of GT MPC on first visits beside recursive Bayes', and the fraction
  of picked segments of the revisited gravity (from the runs' ``belief_*`` columns);
* and, from the continual folder, the trials after the return to 9.81 m/s² until a run
  reaches 90 % of GT MPC at 9.81 (the episodic GT's median over seeds at 9.81).

Usage::

    python scripts/segment_acceptance.py --episodic OUT/ce_full/cartpole-episodic \\
        --continual OUT/cc_full/cartpole-continual [--sweep OUT/sweep --jobs 2]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from pathlib import Path

import numpy as np
import pandas as pd

from bam_rl.harness.experiments import cartpole

#: Sweep variants: label -> readout_after_steps (``None``: tied readout after trial 1 only).
SWEEP = {"seg_after_trial": None, "seg_k5": 5, "seg_k25": 25, "seg_k10_50": (10, 50)}
FIRST_TRIAL_RATIO = 0.7
WITHIN = 0.9


def run_sweep(out: Path, seeds: int, jobs: int) -> pd.DataFrame:
    """Runs the sweep variants on the episodic schedule; returns their per-trial rows."""
    from bam_rl.harness import make_grid, run_many

    methods = {
        label: (
            "mppi-bam-segments",
            {"announced": True, "readout_after_steps": k, **cartpole.PLANNING},
        )
        for label, k in SWEEP.items()
    }
    spec = cartpole.SETTINGS["episodic"]
    gravities = cartpole.schedule("episodic")
    grid = make_grid(
        methods, {"episodic": (spec["env_id"], {})}, seeds=seeds, n_episodes=len(gravities)
    )
    backend = "serial" if jobs == 1 else "loky"
    steps = run_many(grid, backend=backend, n_jobs=jobs, out_dir=out / "runs", progress=False)
    trials = cartpole.per_trial(steps, gravities)
    for column in ("belief_in_trial_readout_same_gravity",):
        if column in steps:
            last = steps.groupby(["method", "seed_index", "episode"])[column].last()
            trials[column.removeprefix("belief_")] = last.to_numpy()
    trials.to_csv(out / "trials.csv", index=False)
    return trials


def runs_trials(folder: Path, label: str) -> pd.DataFrame:
    """Per-trial rows of one method from the run files found so far (a sweep under way)."""
    frames = []
    for path in sorted((folder / "runs").glob(f"{label}__*.parquet")):
        frame = pd.read_parquet(path)
        rows = frame.groupby(["seed_index", "episode"]).agg(
            reward=("reward", "mean"), gravity=("gravity", "first")
        )
        frames.append(rows.reset_index().rename(columns={"episode": "trial"}))
    trials = pd.concat(frames) if frames else pd.DataFrame()
    trials["method"] = label
    return trials


def runs_picks(folder: Path, label: str) -> pd.DataFrame:
    """Per (seed, trial) pick fractions of a segment method, from its run files."""
    frames = []
    for path in sorted((folder / "runs").glob(f"{label}__*.parquet")):
        frame = pd.read_parquet(path)
        frames.append(
            frame.groupby(["seed_index", "episode"])[
                ["belief_readout_same_gravity", "belief_in_trial_readout_same_gravity"]
            ]
            .last()
            .reset_index()
            .rename(columns={"episode": "trial"})
        )
    return pd.concat(frames) if frames else pd.DataFrame()


def episodic_report(trials: pd.DataFrame, methods: list[str], picks: pd.DataFrame | None) -> None:
    gravity = trials.groupby("trial")["gravity"].first().to_numpy()
    starts = cartpole.episode_starts(gravity)
    gt = trials[trials["method"] == "gt"].set_index(["seed_index", "trial"])["reward"]
    seen: set[float] = set()
    revisits, firsts = [], []
    for start in starts:
        (revisits if gravity[start] in seen else firsts).append(int(start))
        seen.add(float(gravity[start]))
    reward = trials.set_index(["method", "seed_index", "trial"])["reward"]
    seeds = sorted(trials["seed_index"].unique())
    print(f"revisit starts {revisits}; first visits {firsts}; seeds {seeds}")
    for method in methods:
        if method not in set(trials["method"]):
            continue
        r1, r2 = [], []
        for seed in seeds:
            for start in revisits:
                reference = gt[(seed, start)]
                r1.append(reward[(method, seed, start)] / reference)
                r2.append(reward[(method, seed, start + 1)] / reference)
        r1a, r2a = np.array(r1), np.array(r2)
        print(
            f"{method:16s} revisit trial 1: >= {FIRST_TRIAL_RATIO} x GT in "
            f"{(r1a >= FIRST_TRIAL_RATIO).sum()}/{r1a.size}, median ratio {np.median(r1a):.2f} "
            f"[{' '.join(f'{v:.2f}' for v in r1a)}]"
        )
        print(
            f"{'':16s} revisit trial 2: within 10 % of GT in {(r2a >= WITHIN).sum()}/{r2a.size}, "
            f"median ratio {np.median(r2a):.2f} [{' '.join(f'{v:.2f}' for v in r2a)}]"
        )
        # first visits: trials until the median over seeds reaches 90 % of GT's median
        medians = trials[trials["method"] == method].groupby("trial")["reward"].median()
        gt_median = trials[trials["method"] == "gt"].groupby("trial")["reward"].median()
        stops = list(starts[1:]) + [len(gravity)]
        recovery = []
        for start in firsts:
            stop = stops[list(starts).index(start)]
            target = gt_median[start] - 0.1 * abs(gt_median[start])
            hits = np.flatnonzero(medians.iloc[start:stop].to_numpy() >= target)
            recovery.append(int(hits[0]) + 1 if hits.size else stop - start + 1)
        print(
            f"{'':16s} first visits (g = {', '.join(f'{gravity[s]:g}' for s in firsts)}): trials "
            f"until 90 % of GT MPC (median curve) {recovery}"
        )
    if picks is not None and len(picks):
        for column, trial_offset in (
            ("belief_in_trial_readout_same_gravity", 0),
            ("belief_readout_same_gravity", 0),
        ):
            rows = picks[picks["trial"].isin([s + trial_offset for s in revisits])]
            values = rows[column].to_numpy(dtype=float)
            print(
                f"picks on revisits, {column.removeprefix('belief_')}: mean "
                f"{np.nanmean(values):.2f} over {np.isfinite(values).sum()} readouts "
                f"[{' '.join(f'{v:.2f}' for v in values)}]"
            )


def continual_report(trials: pd.DataFrame, gt_981: float) -> None:
    gravity = trials.groupby("trial")["gravity"].first().to_numpy()
    starts = cartpole.episode_starts(gravity)
    back = [int(s) for s in starts[1:] if gravity[s] == 9.81]
    target = gt_981 - 0.1 * abs(gt_981)
    print(f"continual: return to 9.81 at trial {back}; target 90 % of GT MPC = {target:.3f}")
    for method, runs in trials.groupby("method"):
        per_seed = []
        for _, run in runs.groupby("seed_index"):
            curve = run.set_index("trial")["reward"].sort_index().to_numpy()
            for start in back:
                stop = next((int(s) for s in starts if s > start), len(curve))
                hits = np.flatnonzero(curve[start:stop] >= target)
                per_seed.append(int(hits[0]) + 1 if hits.size else stop - start + 1)
        median_curve = runs.groupby("trial")["reward"].median().to_numpy()
        hits = np.flatnonzero(median_curve[back[0] :] >= target)
        print(
            f"{method:14s} trials after the change until 90 % of GT: per seed {per_seed}, "
            f"median {np.median(per_seed):.0f}; median curve "
            f"{int(hits[0]) + 1 if hits.size else 'never'}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodic", type=Path, required=True)
    parser.add_argument("--continual", type=Path)
    parser.add_argument("--sweep", type=Path)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--no-run", action="store_true", help="report finished sweep runs only")
    args = parser.parse_args()
    trials = pd.read_csv(args.episodic / "trials.csv")
    methods = ["bam", "recursive", "bam_segments"]
    picks = runs_picks(args.episodic, "bam_segments")
    episodic_report(trials, methods, picks)
    if args.sweep:
        if args.no_run:  # report the runs finished so far
            swept = pd.concat([runs_trials(args.sweep, label) for label in SWEEP])
        else:
            swept = run_sweep(args.sweep, args.seeds, args.jobs)
        gt = trials[trials["method"] == "gt"]
        for label in SWEEP:
            done = swept[swept["method"] == label]
            if done.empty:
                continue
            both = pd.concat([gt[gt["seed_index"].isin(done["seed_index"])], done])
            print(f"--- sweep {label}: readout_after_steps={SWEEP[label]!r}")
            episodic_report(both, [label], runs_picks(args.sweep, label))
    if args.continual:
        gt = trials[trials["method"] == "gt"]
        gt_981 = float(gt[gt["gravity"] == 9.81].groupby("trial")["reward"].median().mean())
        continual_report(pd.read_csv(args.continual / "trials.csv"), gt_981)


if __name__ == "__main__":
    main()
