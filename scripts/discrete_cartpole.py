"""Discrete actions (issue 41): MPPI agents on Gymnasium's CartPole-v1 (``Discrete(2)``) with
the pole mass 0.1 → 1.0 at t = 0 (NS-Gym's problem; the ``NonStationary`` wrapper, ``masspole``).

Each agent plans with the registry's ``"cartpole-balance"`` reward (K = 32, H = 50, 200
features for the learned models) for ``--episodes`` episodes per seed; prints every episode's
length (500 is the limit), the first episode reaching 500, and the planner's mean cost per
``act``::

    python scripts/discrete_cartpole.py --seeds 0 1 2 --episodes 10
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.harness.registry import make_agent
from bam_rl.schedules import piecewise
from bam_rl.wrappers import NonStationary


def run(name: str, seed: int, episodes: int) -> tuple[list[int], float]:
    """Episode lengths of one seed and the mean seconds per ``act``."""
    env = NonStationary(gym.make("CartPole-v1"), {"masspole": piecewise({0: 1.0})})
    agent = make_agent(name, env, seed=seed, reward="cartpole-balance")
    lengths, elapsed, steps = [], 0.0, 0
    for episode in range(episodes):
        obs, info = env.reset(seed=seed * 1000 + episode)
        agent.reset(obs, info)
        done, n = False, 0
        while not done:
            start = time.perf_counter()
            action = agent.act(obs)
            elapsed += time.perf_counter() - start
            obs, reward, terminated, truncated, info = env.step(action)
            agent.observe(action, reward, obs, terminated, truncated, info)
            done, n = terminated or truncated, n + 1
        lengths.append(n)
        steps += n
    return lengths, elapsed / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--agents", nargs="+", default=["mppi-bam", "mppi-gt"])
    args = parser.parse_args()
    for name in args.agents:
        for seed in args.seeds:
            lengths, per_act = run(name, seed, args.episodes)
            first = next((k + 1 for k, n in enumerate(lengths) if n >= 500), None)
            print(
                f"{name} seed {seed}: lengths {lengths}; first 500 at episode {first}; "
                f"{1e3 * per_act:.2f} ms per act",
                flush=True,
            )
        print(flush=True)


if __name__ == "__main__":
    main()
