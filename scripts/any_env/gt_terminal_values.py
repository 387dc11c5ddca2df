"""Terminal values, batched rollouts (docs/any_env.md#terminal-values-solved-from-the-model).

Issue 53's ground-truth acceptance, measured (beyond the paper):

* ``idp``: ``GroundTruthMPPI`` on InvertedDoublePendulum-v5, gravity 9.81 → 14 and the second
  pole's mass × 2 mid-trial (``NonStationary``, step schedules), planning with
  ``"inverted-double-pendulum-lqr-terminal"`` (the environment's reward plus the LQR
  cost-to-go solved from the live model, again after each change): steps held of 1000;
* ``ip``: InvertedPendulum-v5 at gravity 3.72 with ``"inverted-pendulum-lqr-terminal"``;
* ``equality``: the batched rollouts (``mujoco.rollout``) against ``env.step``'s own
  ``do_simulation`` and ``_get_obs`` stepped from copies of the live data after gravity
  and mass changes (largest absolute difference of the observations; InvertedDoublePendulum
  driven into the rail's ends, so its constraint-force entry is exercised);
* ``worlds``: the recurring-worlds suite's worlds of both (300-step trials, constant world);
* ``pendulum``: Pendulum-v1's swing-up with ``"pendulum-swingup-lqr-terminal"`` against the
  plain reward (the equilibrium far from the start);
* ``cost``: one rollout at equal K and H, batched on 2 threads against the loop of ``MjData``
  copies (medians, with the load average).

Usage::

    python scripts/any_env/gt_terminal_values.py --parts idp ip equality cost --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import gymnasium as gym
import mujoco
import numpy as np
from gt_double_pendulum import add_change_arguments, changes

import bam_rl  # noqa: F401
from bam_rl.agents.mppi import GroundTruthMPPI
from bam_rl.agents.simulator import MujocoEnvDynamics
from bam_rl.schedules import piecewise
from bam_rl.wrappers import NonStationary


def episode(
    env: gym.Env, seed: int, nominal: bool = False, **agent_options: Any
) -> tuple[int, float, int, float]:
    """Steps held (of the time limit), seconds per act, the terminal value's solves and the
    return of one ground-truth episode; ``nominal``: the terminal value keeps the nominal
    model's ``P`` (an ablation)."""
    obs, info = env.reset(seed=seed)
    agent = GroundTruthMPPI(env, seed=seed, **agent_options)
    if nominal:
        dynamics: Any = agent.dynamics
        dynamics.terminal_cost = lambda terminal: terminal.nominal_cost()
    agent.reset(obs, info)
    steps, elapsed, total = 0, 0.0, 0.0
    while True:
        start = time.perf_counter()
        action = agent.act(obs)
        elapsed += time.perf_counter() - start
        obs, reward, terminated, truncated, info = env.step(action)
        agent.observe(action, float(reward), obs, terminated, truncated, info)
        steps += 1
        total += float(reward)
        if terminated or truncated:
            break
    solves = int(getattr(agent.dynamics, "terminal_solves", 0))
    return steps, elapsed / steps, solves, total


def _held(
    args: argparse.Namespace, env_id: str, schedules: dict[str, Any], **agent_options: Any
) -> None:
    """One episode a seed of ``env_id`` under ``schedules`` (``NonStationary``): steps held,
    time per act, ``P``'s solves."""
    held = 0
    for seed in args.seeds:
        env = NonStationary(gym.make(env_id), schedules)
        steps, seconds, solves, _ = episode(env, seed, args.nominal_p, **agent_options)
        held += steps == 1000
        print(
            f"  seed {seed}: {steps} of 1000 steps, {seconds * 1e3:.1f} ms an act, "
            f"P solved {solves}x"
        )
    print(f"  held 1000 of 1000 on {held} of {len(args.seeds)} seeds")


def _planner(args: argparse.Namespace, part: str) -> dict[str, Any]:
    """The planner's options of ``part`` (``"idp"`` or ``"ip"``): ``--{part}-reward``,
    ``--{part}-k`` and ``--{part}-h``."""
    return {
        "reward": getattr(args, f"{part}_reward"),
        "n_samples": getattr(args, f"{part}_k"),
        "horizon": getattr(args, f"{part}_h"),
    }


def part_idp(args: argparse.Namespace) -> None:
    nominal: Any = gym.make("InvertedDoublePendulum-v5").unwrapped
    mass = float(nominal.model.body("pole2").mass[0])
    print(
        f"InvertedDoublePendulum-v5: gravity 9.81 -> {args.gravity} at step {args.gravity_step}, "
        f"pole2 mass x{args.mass_factor:g} at step {args.mass_step}; "
        f"K = {args.idp_k}, H = {args.idp_h}, reward {args.idp_reward}"
    )
    _held(args, "InvertedDoublePendulum-v5", changes(args, mass), **_planner(args, "idp"))


def part_ip(args: argparse.Namespace) -> None:
    print(
        f"InvertedPendulum-v5 at gravity {args.ip_gravity}: K = {args.ip_k}, H = {args.ip_h}, "
        f"reward {args.ip_reward}"
    )
    gravity = piecewise({0: args.ip_gravity}, unit="step")
    _held(args, "InvertedPendulum-v5", {"gravity": gravity}, **_planner(args, "ip"))


def part_worlds(args: argparse.Namespace) -> None:
    """The recurring-worlds suite's worlds (``bam_rl/wrappers/recurring.py``), one 300-step
    trial each, with the terminal values and the budgets above (a constant world)."""
    print("the recurring suite's worlds, 300-step trials, steps held per seed")
    cases = (
        ("InvertedPendulum-v5", "gravity", (9.81, 3.72, 20.0), _planner(args, "ip")),
        ("InvertedDoublePendulum-v5", "mass:pole2", (4.199, 1.0, 10.0), _planner(args, "idp")),
    )
    for env_id, name, values, planner in cases:
        for value in values:
            held = []
            for seed in args.seeds:
                constant = {name: piecewise({0: value}, unit="step")}
                env = NonStationary(gym.make(env_id, max_episode_steps=300), constant)
                held.append(episode(env, seed, **planner)[0])
            print(
                f"  {env_id} {name} = {value:g} (K = {planner['n_samples']}, "
                f"H = {planner['horizon']}, {planner['reward']}): {held}"
            )


def part_pendulum(args: argparse.Namespace) -> None:
    """Pendulum-v1's swing-up (200 steps, from Gymnasium's random starts), the ground truth
    with and without the terminal value about upright, K = 128 (its row), several H."""
    print("Pendulum-v1 swing-up: returns per seed (the row's K = 128, temperature 0.1)")
    for g, horizons in ((10.0, (30, 10, 5)), (3.72, (10,))):
        for h in horizons:
            for reward in ("pendulum-swingup", "pendulum-swingup-lqr-terminal"):
                returns = []
                for seed in args.seeds:
                    env = NonStationary(
                        gym.make("Pendulum-v1"), {"g": piecewise({0: g}, unit="step")}
                    )
                    returns.append(episode(env, seed, reward=reward, horizon=h)[3])
                print(
                    f"  g = {g:g}, H = {h}, {reward}: {[round(r, 1) for r in returns]}, "
                    f"mean {np.mean(returns):.1f}"
                )


def part_equality(args: argparse.Namespace) -> None:
    print("batched rollouts against env.step after gravity 9.81 -> 14 and the last body's mass x2")
    for env_id, push in (
        ("InvertedPendulum-v5", 0.0),
        ("InvertedDoublePendulum-v5", 0.0),
        ("InvertedDoublePendulum-v5", 0.6),
        ("HalfCheetah-v5", 0.0),
    ):
        env: Any = gym.make(env_id).unwrapped
        obs, _ = env.reset(seed=0)
        rng = np.random.default_rng(0)
        for _ in range(3):
            obs = env.step(env.action_space.sample())[0]
        env.model.opt.gravity[2] = -14.0
        env.model.body_mass[-1] *= 2.0
        mujoco.mj_setConst(env.model, env.data)
        dynamics = MujocoEnvDynamics(env, batched=True, n_threads=2)
        low, high = env.action_space.low, env.action_space.high
        actions = rng.uniform(low, high, size=(32, 40, low.size)) + push * high
        batched = dynamics(obs, actions)
        # the loop that copies the live MjData and steps the environment's own
        # do_simulation and _get_obs: env.step's states (tests/agents/test_mujoco_batch.py
        # checks both against env.step itself)
        reference = MujocoEnvDynamics(env, batched=False)(obs, actions)
        rail = ""
        if env_id.startswith("InvertedDouble"):
            rail = f", {np.count_nonzero(reference[..., 8])} observations with a constraint force"
        print(
            f"  {env_id} (push {push}): max |batched - env.step| = "
            f"{np.abs(batched - reference).max():.3g}{rail}"
        )


def part_cost(args: argparse.Namespace) -> None:
    from bam_rl.bench.rollout import rollout_rows

    print(f"one rollout, batched (2 threads) against the loop; load {os.getloadavg()[0]:.2f}")
    for workload, ours, peer, bar, met in rollout_rows(quick=False):
        print(
            f"  {workload}: batched {ours * 1e3:.2f} ms, loop {peer * 1e3:.2f} ms, "
            f"ratio {ours / peer:.2f} ({bar}: {met})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["idp", "ip", "equality", "cost"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    add_change_arguments(parser, gravity=14.0)
    parser.add_argument("--idp-k", type=int, default=32)
    parser.add_argument("--idp-h", type=int, default=2)
    parser.add_argument("--idp-reward", default="inverted-double-pendulum-lqr-terminal")
    parser.add_argument("--ip-gravity", type=float, default=3.72)
    parser.add_argument("--ip-k", type=int, default=16)
    parser.add_argument("--ip-h", type=int, default=5)
    parser.add_argument("--ip-reward", default="inverted-pendulum-lqr-terminal")
    parser.add_argument(
        "--nominal-p",
        action="store_true",
        help="ablation: the terminal value keeps the nominal model's P (never re-solved)",
    )
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    parts = {
        "idp": part_idp,
        "ip": part_ip,
        "worlds": part_worlds,
        "pendulum": part_pendulum,
        "equality": part_equality,
        "cost": part_cost,
    }
    for name in args.parts:
        parts[name](args)


if __name__ == "__main__":
    main()
