"""Agent throughput on the paper's 10-arm switching bandit (``bam_rl/SwitchingBandit-v0``).

Prints, for UCB and recursive-Bayes Thompson sampling, the steps per second of the bare
agent + environment loop and of :func:`bam_rl.harness.rollout` (when the harness is
installed), and the wall time of a 10,000-step UCBAM run (10 arms, λ = 0) with the
closed-form greedy readout. With ``--select-steps N`` it also times UCBAM with the generic
:func:`bam_rl.readout.select` for ``N`` steps, next to the closed form on the same steps, and
checks that both pulled the same arms.

Targets: UCB and Thompson ≥ 50,000 steps/s; UCBAM 10,000 steps < 10 s.

Usage::

    python -m bam_rl.bench.agents [--steps 100000] [--repeats 3] [--ucbam-steps 10000]
                                       [--select-steps 0]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import UCB, UCBAM, ThompsonSampling
from bam_rl.bench.timing import best_time, header_line, protocol_loop

ENV_ID = "bam_rl/SwitchingBandit-v0"
TARGET_STEPS_PER_S = 50_000
TARGET_UCBAM_SECONDS = 10.0

AGENTS: dict[str, Callable[[int], Any]] = {
    "ucb": lambda seed: UCB(10, seed=seed),
    "thompson": lambda seed: ThompsonSampling.gaussian(10, "recursive", seed=seed),
}


def throughput(name: str, n_steps: int, repeats: int) -> tuple[float, float | None]:
    """``(loop steps/s, rollout steps/s or None)`` for one agent."""
    env = gym.make(ENV_ID, max_steps=n_steps)
    loop_time = best_time(
        lambda: protocol_loop(env, AGENTS[name](0), n_steps, seed=0, record=True), repeats
    )
    try:
        from bam_rl.harness import rollout
    except ImportError:
        return n_steps / loop_time, None
    rollout_time = best_time(
        lambda: rollout(env, AGENTS[name](0), n_steps=n_steps, seed=0), repeats
    )
    return n_steps / loop_time, n_steps / rollout_time


def ucbam_time(n_steps: int, fast_readout: bool) -> tuple[float, list[int]]:
    env = gym.make(ENV_ID, max_steps=max(n_steps, 1))
    agent = UCBAM.gaussian(10, seed=0, fast_readout=fast_readout)
    start = time.perf_counter()
    actions = protocol_loop(env, agent, n_steps, seed=0, record=True)
    return time.perf_counter() - start, list(actions or [])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ucbam-steps", type=int, default=10_000)
    parser.add_argument("--select-steps", type=int, default=0)
    args = parser.parse_args(argv)

    print(header_line(f"{ENV_ID} (10 arms)"))
    print(f"{'agent':<10} {'loop steps/s':>13} {'rollout steps/s':>16}  target")
    for name in AGENTS:
        raw, harness = throughput(name, args.steps, args.repeats)
        worst = raw if harness is None else min(raw, harness)
        verdict = "ok" if worst >= TARGET_STEPS_PER_S else "MISSED"
        shown = "n/a" if harness is None else f"{harness:,.0f}"
        print(f"{name:<10} {raw:>13,.0f} {shown:>16}  >= {TARGET_STEPS_PER_S:,} {verdict}")

    seconds, _ = ucbam_time(args.ucbam_steps, fast_readout=True)
    verdict = "ok" if seconds < TARGET_UCBAM_SECONDS or args.ucbam_steps != 10_000 else "MISSED"
    print(
        f"ucbam      {args.ucbam_steps:,} steps in {seconds:.2f} s (closed-form greedy readout)"
        f"  < {TARGET_UCBAM_SECONDS:g} s {verdict}"
    )
    if args.select_steps > 0:
        slow, select_actions = ucbam_time(args.select_steps, fast_readout=False)
        fast, short_actions = ucbam_time(args.select_steps, fast_readout=True)
        same = "same arms" if select_actions == short_actions else "ARMS DIFFER"
        print(
            f"ucbam      {args.select_steps:,} steps: select {slow:.2f} s, closed form "
            f"{fast:.2f} s, ratio {slow / fast:.1f}x, {same}"
        )


if __name__ == "__main__":
    main()
