"""docs/recurring.md: HalfCheetah-v5 as an eighth recurring world (issue 42): what a 200-feature
RFF model can do.

Runs one method on HalfCheetah-v5 with the registry's ``"half-cheetah"`` planning reward
(forward velocity minus 0.1 ‖u‖², the environment's reward), 300-step trials, gravity 9.81 (A),
3.72 (B), 9.81 (A) for a third of the trials each (the ``NonStationary`` wrapper, announced),
and prints each trial's return, the world and the milliseconds per step::

    python scripts/recurring/half_cheetah.py random 6 0
    python scripts/recurring/half_cheetah.py mppi-bam-segments 9 0
    python scripts/recurring/half_cheetah.py mppi-gt 3 0

The learners plan with the posterior mean (``planning_models="mean"``) and read the
announcements; GT MPC plans with a copy of the live model.
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np

from bam_rl.harness.registry import make_agent
from bam_rl.schedules import piecewise
from bam_rl.wrappers import NonStationary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("method", help="a registered MPPI agent, or 'random'")
    parser.add_argument("trials", type=int, help="trials, split in three worlds A, B, A")
    parser.add_argument("seed", type=int)
    args = parser.parse_args()
    per = max(args.trials // 3, 1)
    schedule = piecewise({0: 9.81, per: 3.72, 2 * per: 9.81})
    env = NonStationary(
        gym.make("HalfCheetah-v5", max_episode_steps=300), {"gravity": schedule}, notify="value"
    )
    rng = np.random.default_rng(args.seed)
    agent = None
    if args.method != "random":
        learner = {} if args.method == "mppi-gt" else {"announced": True, "planning_models": "mean"}
        agent = make_agent(args.method, env, seed=args.seed, reward="half-cheetah", **learner)
    rows = []
    for trial in range(args.trials):
        # only the first reset is seeded: a seeded reset restarts the wrapper's schedule
        obs, info = env.reset(seed=args.seed if trial == 0 else None)
        if agent is not None:
            agent.reset(obs, info)
        total, done, steps, start = 0.0, False, 0, time.perf_counter()
        while not done:
            if agent is None:
                action = rng.uniform(-1.0, 1.0, size=6).astype(np.float32)
            else:
                action = agent.act(obs)
            obs, reward, terminated, truncated, info = env.step(action)
            if agent is not None:
                agent.observe(action, reward, obs, terminated, truncated, info)
            total, done, steps = total + float(reward), terminated or truncated, steps + 1
        ms = (time.perf_counter() - start) / steps * 1e3
        rows.append(
            {
                "trial": trial,
                "return": round(total, 1),
                "gravity": info["context"]["gravity"],
                "ms_per_step": round(ms, 1),
            }
        )
        print(json.dumps({"method": args.method, "seed": args.seed, **rows[-1]}), flush=True)


if __name__ == "__main__":
    main()
