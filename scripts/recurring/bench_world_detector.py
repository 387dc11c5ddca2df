"""docs/recurring.md: the cost of unannounced segment BAM's change detector (issue 52).

Times ``act`` + ``observe`` per step of ``mppi-bam-segments`` on the cart-pole swing-up
(``bam_rl/RecurringCartPoleSwingUpContinual-v0``, nothing announced) with the detector (the
default) and without it (``change_threshold=None``: BOCD over trials, the agent before issue
52), side by side: the two agents step in turn, each in its own copy of the environment with
the same seed, so both see the same machine load. Prints the medians per step, their ratio
and ``uptime``'s load.

``--env`` times another continual id instead (``MountainCar``: 999-step trials, where the
part's refreshes summed the whole part every 10 steps before issue 52's third round, a cost
quadratic in the part's length; they now add the newest 10 transitions).

Usage::

    python scripts/recurring/bench_world_detector.py --steps 1000
    python scripts/recurring/bench_world_detector.py --steps 3000 --env MountainCar
"""

from __future__ import annotations

import argparse
import os
import time

import gymnasium as gym
import numpy as np

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.harness import make_agent
from bam_rl.wrappers.recurring import SUITE, recurring_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--env", default="CartPoleSwingUp", choices=sorted(SUITE))
    args = parser.parse_args()
    env_id = recurring_id(args.env, True)
    runs = {}
    for label, options in (("detector", {}), ("without", {"change_threshold": None})):
        env = gym.make(env_id, trials_per_world=1)
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
