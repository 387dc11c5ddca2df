"""Ground truth's MuJoCo rollouts: ``mujoco.rollout`` against the loop of ``MjData`` copies.

One planning rollout of ``GroundTruthMPPI``'s model at equal K and H, side by side in one
process: :class:`~bam_rl.agents.simulator.MujocoEnvDynamics` batched (``mujoco.rollout`` on a
persistent pool of 2 threads, and of 1 for reference) against the same class with
``batched=False`` (the loop that copies the live ``MjData`` and steps the environment's own
``do_simulation``, the only path before issue 53). Blocks of :data:`BLOCK` calls alternate
between the two, so a change of the machine's load hits both; each row is the median wall
time over every call. The peer column is the loop; the bar is issue 53's: the batched rollout
takes at most 0.6 × the loop's time on 2 threads (``bam-rl bench`` prints loop / batched ≥
1/0.6, :func:`main` batched / loop ≤ 0.6). Blocks give fewer alternations than single calls
(6 at the default 60 calls), so a load change mid-run is shared less finely.

Why blocks and not single calls: the planner calls its rollout once a step with well under a
millisecond between calls, while alternating single calls leaves the helper thread's core
idle for a whole loop call (12 ms on InvertedDoublePendulum) before each batched one. On the
shared 2-core machine a core idle that long wakes slowly: the same 2-thread IDP rollout (K =
32, H = 5) took a median 4.6 ms back to back or after a 1 ms gap, 7.6–8.1 ms after a 12 ms one
(sleeping or busy on the calling thread; docs/any_env.md). ``--gaps`` measures that;
``--act`` times GT MPC's whole ``act`` on 2 threads against the loop's, the planner's own
rhythm.

Usage: ``python -m bam_rl.bench.rollout [--calls 60] [--gaps] [--act]`` (or ``bam-rl bench
--only rollout``).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

#: (environment, K, H): the ground truth's sizes with a terminal value, and the suite's IDP.
WORKLOADS = (
    ("InvertedPendulum-v5", 16, 5),
    ("InvertedDoublePendulum-v5", 32, 5),
    ("InvertedDoublePendulum-v5", 128, 10),
)
BAR = 0.6
#: Consecutive calls of one side before the other side's block (the first call of each block
#: pays the wake of an idle core; the median is over every call).
BLOCK = 10


def _workload(env_id: str, k: int, h: int) -> tuple[Any, np.ndarray, np.ndarray]:
    """The unwrapped environment reset at seed 0, its observation and ``(k, h, nu)`` actions."""
    import gymnasium as gym

    import bam_rl  # noqa: F401

    env: Any = gym.make(env_id).unwrapped
    observation, _ = env.reset(seed=0)
    actions = np.random.default_rng(0).uniform(-0.3, 0.3, size=(k, h, env.model.nu))
    return env, observation, actions


def _side_by_side(env_id: str, k: int, h: int, threads: int, calls: int) -> tuple[float, float]:
    """Median seconds of one rollout, batched on ``threads`` and by the loop, alternating."""
    from bam_rl.agents.simulator import MujocoEnvDynamics

    env, observation, actions = _workload(env_id, k, h)
    batched = MujocoEnvDynamics(env, batched=True, n_threads=threads)
    loop = MujocoEnvDynamics(env, batched=False)
    if not np.array_equal(
        batched.rollout_unchecked(observation, actions),
        loop.rollout_unchecked(observation, actions),
    ):
        raise RuntimeError(f"{env_id}: the batched rollout differs from the loop")
    times: dict[str, list[float]] = {"batched": [], "loop": []}
    for _block in range(max(2, -(-calls // BLOCK))):  # calls rounded up to whole blocks
        for name, dynamics in (("batched", batched), ("loop", loop)):
            for _ in range(BLOCK):
                start = time.perf_counter()
                dynamics.rollout_unchecked(observation, actions)
                times[name].append(time.perf_counter() - start)
    env.close()
    return float(np.median(times["batched"])), float(np.median(times["loop"]))


def rollout_rows(quick: bool = False, calls: int = 60) -> list[tuple]:
    """Bench rows (workload, ours = batched, peer = loop, bar, met)."""
    n_calls = 5 if quick else calls
    rows: list[tuple] = []
    for env_id, k, h in WORKLOADS[:1] if quick else WORKLOADS:
        for threads in (2, 1):
            ours, peer = _side_by_side(env_id, k, h, threads, n_calls)
            label = (
                f"GT rollout {env_id} K = {k}, H = {h}: mujoco.rollout on {threads} thread"
                f"{'s' if threads > 1 else ''} (peer: the loop of MjData copies)"
            )
            if threads == 2:
                rows.append((label, ours, peer, f"ours ≤ {BAR:g} × peer", ours <= BAR * peer))
            else:
                rows.append((label, ours, peer, None, None))
    return rows


def gap_rows(calls: int = 60) -> list[tuple[str, float]]:
    """Median seconds of the 2-thread IDP rollout (K = 32, H = 5) after each idle gap of the
    calling thread (sleeping): what a core left idle between calls costs the next one."""
    from bam_rl.agents.simulator import MujocoEnvDynamics

    env, observation, actions = _workload("InvertedDoublePendulum-v5", 32, 5)
    batched = MujocoEnvDynamics(env, batched=True, n_threads=2)
    batched.rollout_unchecked(observation, actions)
    rows = []
    for gap in (0.0, 0.001, 0.012):
        times = []
        for _ in range(calls):
            if gap:
                time.sleep(gap)
            start = time.perf_counter()
            batched.rollout_unchecked(observation, actions)
            times.append(time.perf_counter() - start)
        rows.append((f"after a {gap * 1e3:g} ms gap", float(np.median(times))))
    env.close()
    return rows


def act_rows(blocks: int = 15, block_steps: int = 20) -> list[tuple[str, float, float]]:
    """Median seconds of GT MPC's ``act`` with 2-thread batched rollouts and with the loop,
    the two agents stepping their own copies of the environment in alternating blocks of
    ``block_steps`` steps (the ground truth's sizes: InvertedPendulum K = 16, H = 5;
    InvertedDoublePendulum K = 32, H = 5)."""
    import gymnasium as gym

    import bam_rl  # noqa: F401
    from bam_rl.agents.simulator import MujocoEnvDynamics
    from bam_rl.harness.registry import make_agent

    rows = []
    for env_id, k, h in WORKLOADS[:2]:
        sides = []
        for batched in (True, False):
            env = gym.make(env_id)
            agent = make_agent("mppi-gt", env, seed=0, horizon=h, n_samples=k)
            agent.dynamics = MujocoEnvDynamics(
                env.unwrapped, True, batched=batched, n_threads=2 if batched else None
            )
            observation, _ = env.reset(seed=0)
            sides.append([env, agent, observation, []])
        for _block in range(blocks):
            for side in sides:
                env, agent, observation, times = side
                for _ in range(block_steps):
                    start = time.perf_counter()
                    action = agent.act(observation)
                    times.append(time.perf_counter() - start)
                    observation, reward, terminated, truncated, info = env.step(action)
                    agent.observe(action, reward, observation, terminated, truncated, info)
                    if terminated or truncated:
                        observation, _ = env.reset()
                side[2] = observation
        for side in sides:
            side[0].close()
        rows.append(
            (
                f"GT MPC act {env_id} K = {k}, H = {h}",
                float(np.median(sides[0][3])),
                float(np.median(sides[1][3])),
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Prints the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--gaps", action="store_true", help="the rollout after idle gaps")
    parser.add_argument("--act", action="store_true", help="GT MPC's act, 2 threads vs loop")
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f}")
    if args.gaps:
        for label, seconds in gap_rows(args.calls):
            print(f"2-thread IDP rollout (K = 32, H = 5) {label}: {seconds * 1e3:.2f} ms")
    if args.act:
        for label, ours, peer in act_rows():
            print(
                f"{label}: 2 threads {ours * 1e3:.2f} ms, loop {peer * 1e3:.2f} ms, ratio "
                f"{ours / peer:.2f}"
            )
    for workload, ours, peer, bar, met in rollout_rows(args.quick, args.calls):
        verdict = "" if bar is None else f"; bar {bar}: {met}"
        print(
            f"{workload}: {ours * 1e3:.2f} ms, loop {peer * 1e3:.2f} ms, "
            f"ratio {ours / peer:.2f}{verdict}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
