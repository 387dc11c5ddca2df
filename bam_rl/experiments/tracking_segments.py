"""SegmentBAM (beyond the paper) on Experiment 1, the sinusoidal tracking stream, beside BAM.

Runs the tracking experiment's own loop (:func:`bam_rl.harness.runner.rollout` on
``bam_rl/BinomialStream-v0``, 500 steps, seeds 0..19, a Beta(1, 1) prior) for
:class:`~bam_rl.beliefs.SegmentBAM` with BOCD over the data (hazard 1/100, the experiment's
BOCD hazard) and for the paper's BAM (``tracker-bam``), and prints the experiment's summary
(MSE after a burn-in of 100 steps, lag, mean log variance).

Usage: ``python -m bam_rl.experiments.tracking_segments [--seeds 20] [--out DIR]`` (or
``python -m bam_rl.experiments.tracking_segments``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl import hyperparams
from bam_rl.agents.tracking import BeliefTracker
from bam_rl.beliefs import SegmentBAM
from bam_rl.experiments import tracking
from bam_rl.families import BetaBinomial
from bam_rl.harness.files import write_frame
from bam_rl.harness.runner import rollout


def run_segments(seed: int, n_steps: int = 500, n_trials: int = 15) -> tuple[pd.DataFrame, int]:
    """One stream tracked by SegmentBAM: the tracking experiment's per-step rows and the
    number of segments BOCD closed."""
    env = gym.make("bam_rl/BinomialStream-v0", n=n_trials, max_steps=n_steps)
    rule = SegmentBAM(BetaBinomial(1.0, 1.0), hazard=hyperparams.TRACKING_HAZARD)
    agent = BeliefTracker(rule, n_trials=n_trials)
    steps = rollout(env, agent, n_steps=n_steps, seed=seed, method="bam_segments")
    env.close()
    return pd.DataFrame(
        {
            "method": "bam_segments",
            "seed": seed,
            "t": steps["t"].to_numpy(),
            "theta": steps["theta"].to_numpy(),
            "count": steps["belief_count"].to_numpy().astype(np.int64),
            "mean": steps["belief_mean"].to_numpy(),
            "variance": steps["belief_variance"].to_numpy(),
            "remembered": np.nan,
        }
    ), len(rule.segment_sizes)


def main(argv: list[str] | None = None) -> int:
    """Prints the summary of SegmentBAM and BAM over ``--seeds`` streams."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    frames, segments = [], []
    for seed in range(args.seeds):
        frame, n_segments = run_segments(seed)
        frames.append(frame)
        segments.append(n_segments)
        frames.append(tracking.run_tracking("bam", seed))
    frame = pd.concat(frames, ignore_index=True)
    summary = tracking.summarize(frame)
    print(summary.to_string(index=False))
    print(f"segments closed per stream (BOCD, hazard 1/100): median {np.median(segments):.0f}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        write_frame(summary, args.out / "tracking_segments_summary.csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
