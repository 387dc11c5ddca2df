"""Throughput of the bam-rl environments (steps per second), measured on this machine.

Prints the MuJoCo cart-pole side by side with Gymnasium's ``InvertedPendulum-v5`` (same
simulator, two RK4 substeps per step in both) with their speed ratio, and the bandit and
stream environments, each through ``env.step`` of the unwrapped environment and through the
wrappers ``gym.make`` adds. Best of ``--repeats`` timings; actions are drawn in advance.

Targets: cart-pole at most 1.5× slower than ``InvertedPendulum-v5`` (speed ratio ≥ 0.67);
bandits and stream ≥ 50 000 steps/s unwrapped.

Usage::

    python -m bam_rl.bench.envs [--steps 20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import math
import platform
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import gymnasium as gym

from bam_rl import envs  # noqa: F401  (registers the bam_rl/... environments)

TARGET_STEPS_PER_S = 50_000
TARGET_SLOWDOWN = 1.5
#: the bandit and stream environments (bar: ``TARGET_STEPS_PER_S`` unwrapped)
STREAMS = (
    "bam_rl/BinomialStream-v0",
    "bam_rl/SwitchingBandit-v0",
    "bam_rl/SwitchingBandit50-v0",
    "bam_rl/PiecewiseBandit-v0",
)


def _unwrapped(env_id: str) -> gym.Env:
    return gym.make(env_id).unwrapped


def sample_actions(space: gym.Space, n: int, seed: int = 0) -> list[Any]:
    """``n`` valid actions for ``space``, drawn before timing."""
    space.seed(seed)
    return [space.sample() for _ in range(n)]


def step_seconds(env: gym.Env, actions: list[Any], steps: int, seed: int) -> float:
    """Seconds spent in ``steps`` calls of ``env.step`` after ``env.reset(seed=seed)``, the
    ``i``-th with ``actions[i % 1024]``.

    Episodes are run to their end and the environment is reset, but only the ``step`` calls
    are timed (each episode's run of steps is timed as one block), so the frequency of
    resets, which differs between environments (``InvertedPendulum-v5`` terminates when the
    pole falls, the cart-pole truncates after 200 steps), does not bias a comparison.
    """
    env.reset(seed=seed)
    step, reset, clock = env.step, env.reset, time.perf_counter
    elapsed, i = 0.0, 0
    while i < steps:
        start = clock()
        terminated = truncated = False
        while i < steps:
            _, _, terminated, truncated, _ = step(actions[i & 1023])
            i += 1
            if terminated or truncated:
                break
        elapsed += clock() - start
        if terminated or truncated:
            reset()
    return elapsed


def steps_per_second(make: Callable[[], gym.Env], steps: int, repeats: int) -> float:
    """Best-of-``repeats`` throughput of ``step`` over ``steps`` calls (resets not timed:
    :func:`step_seconds`)."""
    env = make()
    actions = sample_actions(env.action_space, 1024)
    best = min((step_seconds(env, actions, steps, r) for r in range(repeats)), default=math.inf)
    env.close()
    return steps / best


def env_rows(quick: bool = False, repeats: int = 3) -> list[tuple]:
    """Bench rows (workload, ours, peer, bar, met): seconds per step of the cart-pole against
    ``InvertedPendulum-v5`` (bar: at most 1.5× slower) and of each bandit and the stream
    (bar: ≥ 50,000 steps/s, i.e. ≤ 20 µs per step), unwrapped."""
    n = 2000 if quick else 20_000
    k = 1 if quick else repeats
    ours = steps_per_second(lambda: gym.make("bam_rl/GravityCartPole-v0").unwrapped, n, k)
    peer = steps_per_second(lambda: gym.make("InvertedPendulum-v5").unwrapped, n, k)
    rows: list[tuple] = [
        (
            "GravityCartPole step (peer: InvertedPendulum-v5), unwrapped",
            1 / ours,
            1 / peer,
            f"ours ≤ {TARGET_SLOWDOWN}× peer",
            ours * TARGET_SLOWDOWN >= peer,
        )
    ]
    for env_id in STREAMS:
        raw = steps_per_second(partial(_unwrapped, env_id), n * 5, k)
        rows.append(
            (
                f"{env_id} step, unwrapped ({raw:,.0f} steps/s)",
                1 / raw,
                float("nan"),
                f"≥ {TARGET_STEPS_PER_S:,} steps/s",
                raw >= TARGET_STEPS_PER_S,
            )
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--steps", type=int, default=20_000, help="steps per timing")
    parser.add_argument("--repeats", type=int, default=3, help="timings per workload (best)")
    args = parser.parse_args(argv)
    n, k = args.steps, args.repeats
    print(
        f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"gymnasium {gym.__version__}, {n} steps, best of {k}"
    )

    # --- cart-pole vs InvertedPendulum-v5 (step calls only; resets are not timed) ---------
    ours = steps_per_second(lambda: gym.make("bam_rl/GravityCartPole-v0").unwrapped, n, k)
    peer = steps_per_second(lambda: gym.make("InvertedPendulum-v5").unwrapped, n, k)
    ours_w = steps_per_second(lambda: gym.make("bam_rl/GravityCartPole-v0"), n, k)
    peer_w = steps_per_second(lambda: gym.make("InvertedPendulum-v5"), n, k)
    print()
    print(f"{'workload':52s} {'ours/s':>10s} {'peer/s':>10s} {'ours/peer':>9s}  target")
    for label, a, b in (
        ("GravityCartPole vs InvertedPendulum-v5, unwrapped", ours, peer),
        ("GravityCartPole vs InvertedPendulum-v5, gym.make", ours_w, peer_w),
    ):
        ok = "ok" if a * TARGET_SLOWDOWN >= b else "MISSED"
        print(f"{label:52s} {a:10,.0f} {b:10,.0f} {a / b:9.2f}  >= {1 / TARGET_SLOWDOWN:.2f} {ok}")

    # --- bandits and stream -------------------------------------------------------------
    print()
    print(f"{'environment':52s} {'unwrapped/s':>12s} {'gym.make/s':>12s}  target (unwrapped)")
    for env_id in STREAMS:
        raw = steps_per_second(partial(_unwrapped, env_id), n * 5, k)
        wrapped = steps_per_second(partial(gym.make, env_id), n * 5, k)
        ok = "ok" if raw >= TARGET_STEPS_PER_S else "MISSED"
        print(f"{env_id:52s} {raw:12,.0f} {wrapped:12,.0f}  >= {TARGET_STEPS_PER_S:,} {ok}")


if __name__ == "__main__":
    main()
