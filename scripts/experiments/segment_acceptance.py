"""docs/experiments.md: Segment BAM's numbers (issue 22) for finished cart-pole folders, and the
sweep of ``readout_after_steps`` and the dynamics model and planner
(:mod:`bam_rl.experiments.cartpole_segments`).

``bam-rl reproduce cartpole-episodic`` / ``cartpole-continual`` write the same lines to
``segments.txt``; this prints them for any folders and runs (or reports) the sweep::

    python scripts/experiments/segment_acceptance.py --episodic OUT/cartpole-episodic \\
        [--continual OUT/cartpole-continual] [--sweep OUT/sweep [--no-run] --jobs 2] \\
        [--gt-again OUT/gt-again]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from bam_rl.experiments import cartpole
from bam_rl.experiments import cartpole_segments as segments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodic", type=Path, required=True)
    parser.add_argument("--continual", type=Path)
    parser.add_argument("--sweep", type=Path)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--no-run", action="store_true", help="report finished sweep runs only")
    parser.add_argument(
        "--gt-again",
        type=Path,
        help="folder of a second GT MPC sample (run there if missing, ~25 ms a control step; "
        "resumes finished runs even without --no-run)",
    )
    args = parser.parse_args()
    trials = pd.read_csv(args.episodic / "trials.csv")
    # only the runs of the current options (a reused folder keeps older runs under other keys)
    n_seeds = int(trials["seed_index"].max()) + 1
    current = [
        s.key for s in cartpole.cartpole_grid("episodic", n_seeds) if s.method == "bam_segments"
    ]
    picks = segments.runs_picks(args.episodic, "bam_segments", current)
    lines = segments.episodic_lines(trials, segments.EPISODIC_METHODS, picks)
    lines += segments.settled_lines(trials, segments.EPISODIC_METHODS)
    if args.sweep:
        sweep_keys = [spec.key for spec in cartpole.sweep_grid(args.seeds)]
        if args.no_run:
            swept = pd.concat(
                [segments.runs_trials(args.sweep, k, sweep_keys) for k in segments.SWEEP]
            )
        else:
            swept = cartpole.segment_sweep(args.sweep, args.seeds, args.jobs)
        gt = trials[trials["method"] == "gt"]
        for label, steps in segments.SWEEP.items():
            done = swept[swept["method"] == label]
            if done.empty:
                lines.append(f"--- sweep {label}: no runs of the current options")
                continue
            both = pd.concat([gt[gt["seed_index"].isin(done["seed_index"])], done])
            lines.append(f"--- sweep {label}: {steps!r}")
            picked = segments.runs_picks(args.sweep, label, sweep_keys)
            lines += segments.episodic_lines(both, [label], picked)
            lines += segments.settled_lines(both, [label])
    if args.gt_again:
        again = cartpole.gt_resample(args.gt_again, args.seeds, args.jobs)
        lines += segments.gt_self_lines(trials, again)
    if args.continual:
        continual = pd.read_csv(args.continual / "trials.csv")
        lines += segments.continual_lines(continual, segments.gt_at_981(trials))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
