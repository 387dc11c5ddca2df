"""Throughput of :func:`bam_rl.harness.rollout` against the bare env + agent loop.

For UCB and recursive-Bayes Thompson sampling on the 10-arm switching bandit
(``bam_rl/SwitchingBandit-v0``, made with ``gymnasium.make``) it prints the steps per second
of ``rollout`` (including building the DataFrame), of the same env + agent loop written by
hand without recording anything, their ratio, and the harness overhead per step. The two are
timed alternately, best of ``--repeats``, each run with a fresh agent.

Target: ``rollout`` ≥ 50 000 steps/s for both agents.

Usage::

    python -m bam_rl.bench.loop [--steps 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
from functools import partial

import gymnasium as gym

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.bench.timing import best_time, header_line, protocol_loop
from bam_rl.harness import make_agent, rollout

TARGET_STEPS_PER_S = 50_000
ENV_ID = "bam_rl/SwitchingBandit-v0"


def measure(agent_name: str, n_steps: int, repeats: int) -> tuple[float, float]:
    """``(rollout steps/s, raw-loop steps/s)`` for one registered agent."""
    env = gym.make(ENV_ID)
    raw_best = roll_best = float("inf")
    for r in range(repeats):  # alternate, so both see the same machine load
        agent = make_agent(agent_name, env, seed=r)
        raw_best = min(raw_best, best_time(partial(protocol_loop, env, agent, n_steps, 0), 1))
        agent = make_agent(agent_name, env, seed=r)
        roll_best = min(
            roll_best, best_time(partial(rollout, env, agent, n_steps=n_steps, seed=0), 1)
        )
    env.close()
    return n_steps / roll_best, n_steps / raw_best


def main(argv: list[str] | None = None) -> None:
    """Prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(header_line(ENV_ID, f"{args.steps} steps", f"best of {args.repeats}"))
    print()
    header = (
        f"{'agent':<10} {'rollout/s':>11} {'raw loop/s':>11} {'rollout/raw':>11} "
        f"{'overhead':>10}  target"
    )
    print(header)
    for name in ("ucb", "thompson"):
        ours, raw = measure(name, args.steps, args.repeats)
        overhead_us = (1.0 / ours - 1.0 / raw) * 1e6
        verdict = "ok" if ours >= TARGET_STEPS_PER_S else "MISSED"
        print(
            f"{name:<10} {ours:>11,.0f} {raw:>11,.0f} {ours / raw:>11.2f} "
            f"{overhead_us:>7.2f} µs  >= {TARGET_STEPS_PER_S:,} {verdict}"
        )


if __name__ == "__main__":
    main()
