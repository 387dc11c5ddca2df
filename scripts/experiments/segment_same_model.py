"""docs/experiments.md: The paper's rules with segment BAM's model and planner, on the episodic
cart-pole.

Runs ``mppi-recursive`` (``--recursive-seeds``, 15) and ``mppi-bam`` (``--bam-seeds``, 5) with
:data:`~bam_rl.harness.registry.SEGMENT_MODEL_OPTIONS` (features blind to the cart position,
planning with the posterior mean model), resumable under ``--out/runs``, and prints their
first visits, revisit trials and settled levels beside the reproduction's rows of
``--episodic`` (a ``bam-rl reproduce cartpole-episodic`` folder with as many seeds, for GT MPC
and the paper's rows). docs/experiments.md quotes it as the rows *new model*::

    MUJOCO_GL=egl python scripts/experiments/segment_same_model.py \\
        --episodic OUT/cartpole-episodic \\
        --out OUT/same-model --jobs 2

About 10 min with two jobs on the 2-core machine.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from bam_rl.experiments import cartpole
from bam_rl.experiments import cartpole_segments as segments
from bam_rl.harness import make_grid, run_many
from bam_rl.harness.registry import SEGMENT_MODEL_OPTIONS

#: label -> (registered agent, its own options; the model and planner options are added)
ROWS = {
    "recursive_new_model": ("mppi-recursive", {}),
    "bam_new_model": ("mppi-bam", {"announced": True}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodic", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--recursive-seeds", type=int, default=15)
    parser.add_argument("--bam-seeds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    spec = cartpole.SETTINGS["episodic"]
    gravities = cartpole.schedule("episodic")
    grid = []
    for label, seeds in zip(ROWS, (args.recursive_seeds, args.bam_seeds), strict=True):
        name, options = ROWS[label]
        kwargs = {**options, **SEGMENT_MODEL_OPTIONS, **cartpole.PLANNING}
        grid += make_grid(
            {label: (name, kwargs)},
            {"episodic": (spec["env_id"], {})},
            seeds=seeds,
            n_episodes=len(gravities),
        )
    backend = "serial" if args.jobs == 1 else "loky"
    steps = run_many(grid, backend=backend, n_jobs=args.jobs, out_dir=args.out / "runs")
    trials = cartpole.per_trial(steps, gravities)
    reproduced = pd.read_csv(args.episodic / "trials.csv")
    for label, seeds in zip(ROWS, (args.recursive_seeds, args.bam_seeds), strict=True):
        both = pd.concat([reproduced, trials[trials["method"] == label]])
        both = both[both["seed_index"] < seeds]
        if both[both["method"] == "gt"]["seed_index"].nunique() < seeds:
            raise SystemExit(f"--episodic has fewer than {seeds} seeds of GT MPC")
        paper = "recursive" if label.startswith("recursive") else "bam"
        r1, r2 = segments.revisit_ratios(both, label)
        print(f"--- {label}, seeds 0-{seeds - 1}")
        print(
            f"first visits: trials to 90 % of GT MPC {segments.first_visit_recovery(both, label)}"
            f" (the paper's model: {segments.first_visit_recovery(both, paper)}); revisit "
            f"trial 1 >= 0.7 x GT in {(r1 >= 0.7).sum()} of {r1.size} (median {np.median(r1):.2f})"
            f", trial 2 within 10 % in {(r2 >= 0.9).sum()} of {r2.size}"
        )
        for line in segments.settled_lines(both, [paper, label]):
            print(line)


if __name__ == "__main__":
    main()
