"""Non-stationary wrappers side by side: the plain step, ``bam_rl.wrappers.NonStationary``
and NS-Gym's ``MujocoWrapper`` on ``InvertedPendulum-v5`` and ``HalfCheetah-v5``.

Each wrapper changes gravity every 100 steps (ours: ``cycle([9.81, 11.15, 3.72], every=100,
unit="step")``; NS-Gym: ``CyclicUpdate(PeriodicScheduler(100), ...)`` on the z component).
The three step loops are timed in interleaved rounds in one process (actions drawn in
advance, resets not timed) and each keeps its fastest round, so the ratios compare like with
like under the same load (30 short rounds: the fastest of many is robust to a shared
machine). Also timed: a planning copy of the current world (ours: ``planning_copy()``;
NS-Gym: ``get_planning_env()``).

Bars (issue 40): our step ≤ 1.10 × the plain step; a planning copy ≤ 0.5 ms. NS-Gym is the
optional ``bench`` peer (``pip install ns-gym==1.0.12 --no-deps``: its metadata pins
``mujoco<3.4``); when it is missing the rows say so and ours is still timed against plain.

Usage::

    python -m bam_rl.bench.wrappers [--steps 20000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import time
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np

from bam_rl.bench.envs import sample_actions, step_seconds
from bam_rl.schedules import cycle
from bam_rl.wrappers import NonStationary

ENVS = ("InvertedPendulum-v5", "HalfCheetah-v5")
GRAVITIES = (9.81, 11.15, 3.72)
EVERY = 100
STEP_BAR = 1.10
COPY_BAR = 0.5e-3


def _ours(env_id: str) -> gym.Env:
    return NonStationary(gym.make(env_id), {"gravity": cycle(GRAVITIES, every=EVERY, unit="step")})


def _ns_gym(env_id: str) -> gym.Env | None:
    """NS-Gym's MuJoCo wrapper with the same schedule, or None when ns-gym is missing."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from ns_gym import schedulers, update_functions
            from ns_gym.wrappers import MujocoWrapper
    except ImportError:
        return None
    update = update_functions.CyclicUpdate(
        schedulers.PeriodicScheduler(period=EVERY), [-g for g in GRAVITIES[1:] + GRAVITIES[:1]]
    )
    return MujocoWrapper(gym.make(env_id), {"gravity": update}, change_notification=True)


def step_times(env_id: str, steps: int, rounds: int) -> dict[str, float]:
    """Fastest seconds per step of each variant over interleaved ``rounds``."""
    variants: dict[str, gym.Env] = {"plain": gym.make(env_id), "ours": _ours(env_id)}
    peer = _ns_gym(env_id)
    if peer is not None:
        variants["ns-gym"] = peer
    actions = sample_actions(variants["plain"].action_space, 1024)
    best = dict.fromkeys(variants, math.inf)
    for r in range(rounds):
        for name, env in variants.items():
            best[name] = min(best[name], step_seconds(env, actions, steps, r) / steps)
    for env in variants.values():
        env.close()
    return best


def copy_time(make: Callable[[], Any], copy: Callable[[Any], Any], n: int) -> float:
    """Median seconds of a planning copy after 150 steps (the world has changed once)."""
    env = make()
    env.reset(seed=0)
    zero = np.zeros_like(env.action_space.sample())
    for _ in range(150):
        env.step(zero)
    copy(env)  # first copy (ours: the model copy of this world)
    times = []
    for _ in range(n):
        start = time.perf_counter()
        copy(env)
        times.append(time.perf_counter() - start)
    env.close()
    return float(np.median(times))


def _our_copy(env: Any) -> Any:
    return env.get_wrapper_attr("planning_copy")()


def _peer_copy(env: Any) -> Any:
    return env.get_planning_env()


def wrapper_rows(quick: bool = False) -> list[tuple]:
    """Bench rows (workload, ours, peer, bar, met) for ``bam-rl bench --only wrappers``."""
    steps, rounds, copies = (1000, 2, 20) if quick else (4000, 30, 200)
    rows: list[tuple] = []
    load = os.getloadavg()[0]
    for env_id in ENVS:
        t = step_times(env_id, steps, rounds)
        ratio = t["ours"] / t["plain"]
        rows.append(
            (
                f"{env_id} step with NonStationary (gravity every {EVERY} steps) against the "
                f"plain step: {ratio:.3f}× (load {load:.1f})",
                t["ours"],
                t["plain"],
                f"ours ≤ {STEP_BAR:.2f}× peer",
                t["ours"] <= STEP_BAR * t["plain"],
            )
        )
        if "ns-gym" in t:
            rows.append(
                (
                    f"{env_id} step: ours ({ratio:.3f}× plain) against NS-Gym's MujocoWrapper "
                    f"({t['ns-gym'] / t['plain']:.3f}× plain)",
                    t["ours"],
                    t["ns-gym"],
                )
            )
        else:
            rows.append((f"{env_id} step: NS-Gym not installed (pip install ns-gym)", t["ours"]))
        ours_copy = copy_time(partial(_ours, env_id), _our_copy, copies)
        peer_copy = math.nan
        if _ns_gym(env_id) is not None:
            peer_copy = copy_time(partial(_ns_gym, env_id), _peer_copy, max(copies // 10, 5))
        rows.append(
            (
                f"{env_id} planning copy of the current world (peer: NS-Gym get_planning_env)",
                ours_copy,
                peer_copy,
                f"ours ≤ {COPY_BAR * 1e3:g} ms",
                ours_copy <= COPY_BAR,
            )
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    """Print the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--quick", action="store_true", help="a smoke test")
    args = parser.parse_args(argv)
    for workload, ours, *rest in wrapper_rows(args.quick):
        peer = rest[0] if rest else math.nan
        print(f"{workload}\n    ours {ours * 1e6:.2f} us, peer {peer * 1e6:.2f} us")


if __name__ == "__main__":
    main()
