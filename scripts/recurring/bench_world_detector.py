"""docs/recurring.md: the cost of unannounced segment BAM's change detector (issue 52).

Times ``act`` + ``observe`` per step of ``mppi-bam-segments`` on the cart-pole swing-up
(``bam_rl/RecurringCartPoleSwingUpContinual-v0``, nothing announced) with the detector (the
default) and without it (``change_threshold=None``: BOCD over trials, the agent before issue
52), side by side: the two agents step in turn, each in its own copy of the environment with
the same seed, so both see the same machine load. Prints the medians per step, their ratio
and ``uptime``'s load.

Usage::

    python scripts/recurring/bench_world_detector.py --steps 1000
"""

from __future__ import annotations

import argparse
import os
import time

import gymnasium as gym
import numpy as np

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.harness import make_agent

ENV = "bam_rl/RecurringCartPoleSwingUpContinual-v0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    runs = {}
    for label, options in (("detector", {}), ("without", {"change_threshold": None})):
        env = gym.make(ENV, trials_per_world=1)
        agent = make_agent("mppi-bam-segments", env, seed=args.seed, **options)
        observation, info = env.reset(seed=args.seed)
        agent.reset(observation, info)
        runs[label] = {"env": env, "agent": agent, "obs": observation, "times": []}
    for _ in range(args.steps):
        for run in runs.values():
            env, agent = run["env"], run["agent"]
            start = time.perf_counter()
            action = agent.act(run["obs"])
            spent = time.perf_counter() - start
            observation, reward, terminated, truncated, info = env.step(action)
            start = time.perf_counter()
            agent.observe(action, reward, observation, terminated, truncated, info)
            spent += time.perf_counter() - start
            run["times"].append(spent)
            if terminated or truncated:
                observation, info = env.reset()
                agent.reset(observation, info)
            run["obs"] = observation
    medians = {label: float(np.median(run["times"])) * 1e3 for label, run in runs.items()}
    means = {label: float(np.mean(run["times"])) * 1e3 for label, run in runs.items()}
    for label in runs:
        print(f"{label}: median {medians[label]:.2f} ms, mean {means[label]:.2f} ms per step")
    print(
        f"ratio detector / without: median {medians['detector'] / medians['without']:.3f}, "
        f"mean {means['detector'] / means['without']:.3f}"
    )
    print(f"detected changes: {runs['detector']['agent'].n_detected_changes}")
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
