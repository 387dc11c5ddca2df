"""docs/any_env.md: Discrete actions (issue 41): MPPI agents on Gymnasium's CartPole-v1
(``Discrete(2)``) with the pole mass 0.1 → 1.0 at t = 0 (NS-Gym's problem; the ``NonStationary``
wrapper, ``masspole``).

Each agent plans with a registry reward (``--reward``, default ``"cartpole-balance-shaped"``;
K = 32, H = 50, 200 features for the learned models) for ``--episodes`` episodes per seed;
prints every episode's length (500 is the limit), how each episode that fell short ended
(``x``: the cart left |x| <= 2.4; ``θ``: the pole passed 12°), the first episode reaching 500,
the mean effective sample size of the planner's weights (``1 / Σ w²``, of K; K means flat
weights) and the planner's mean cost per ``act``::

    python scripts/any_env/discrete_cartpole.py --seeds 0 1 2 --episodes 10
    python scripts/any_env/discrete_cartpole.py --reward cartpole-balance --agents mppi-bam

``--nsgym`` builds the same problem with NS-Gym's own wrappers instead (its
``NSClassicControlWrapper`` with ``StepWiseUpdate(DiscreteScheduler({0}), [1.0])`` on
``masspole``, through :func:`bam_rl.interop.nsgym.from_nsgym`); it needs ns-gym installed.
NS-Gym restores the mass 0.1 at every reset and applies 1.0 as each episode's first step is
taken (announced in that step's ``info``, so the agents see an in-trial change each episode);
our wrapper's mass is 1.0 from the reset on. An agent told of a change inside a trial plans the
rest of it from the base prior (``MPPIAgent``'s in-trial changes), so ``--notify none`` hides
NS-Gym's per-episode notice to pose our wrapper's problem.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import gymnasium as gym
import numpy as np

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.harness.registry import make_agent
from bam_rl.schedules import piecewise
from bam_rl.wrappers import NonStationary

MASS = 1.0


def make_env(nsgym: bool, notify: str = "nsgym") -> gym.Env:
    """CartPole-v1 whose pole mass is 1.0 from the first step: our wrapper, or NS-Gym's."""
    if not nsgym:
        return NonStationary(gym.make("CartPole-v1"), {"masspole": piecewise({0: MASS})})
    from ns_gym.schedulers import DiscreteScheduler
    from ns_gym.update_functions import StepWiseUpdate
    from ns_gym.wrappers import NSClassicControlWrapper

    from bam_rl.interop.nsgym import from_nsgym

    # NS-Gym restores the mass (0.1) at every reset and sets 1.0 as the first step of each
    # episode is taken (announced in that step's info, with its value)
    update = StepWiseUpdate(DiscreteScheduler({0}), [MASS])
    wrapped = NSClassicControlWrapper(
        gym.make("CartPole-v1"),
        {"masspole": update},
        change_notification=True,
        delta_change_notification=True,
    )
    return from_nsgym(wrapped, notify=notify)


def run(
    name: str,
    seed: int,
    episodes: int,
    reward: str,
    options: dict[str, Any],
    nsgym: bool,
    notify: str = "nsgym",
) -> tuple[list[int], list[str], float, float]:
    """Episode lengths and ends of one seed, the mean effective sample size and seconds/act."""
    env = make_env(nsgym, notify)
    agent = make_agent(name, env, seed=seed, reward=reward, **options)
    lengths, ends, elapsed, steps, ess = [], [], 0.0, 0, 0.0
    for episode in range(episodes):
        obs, info = env.reset(seed=seed * 1000 + episode)
        agent.reset(obs, info)
        done, n, terminated = False, 0, False
        while not done:
            start = time.perf_counter()
            action = agent.act(obs)
            elapsed += time.perf_counter() - start
            weights = agent.planner.last_weights
            ess += 1.0 / float(np.sum(weights**2))
            obs, _, terminated, truncated, info = env.step(action)
            agent.observe(action, _, obs, terminated, truncated, info)
            done, n = terminated or truncated, n + 1
        lengths.append(n)
        ends.append(("x" if abs(obs[0]) > 2.4 else "θ") if terminated else "")
        steps += n
    return lengths, ends, ess / steps, elapsed / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--agents", nargs="+", default=["mppi-bam", "mppi-gt"])
    parser.add_argument("--reward", default="cartpole-balance-shaped")
    parser.add_argument(
        "--options", default="{}", help="JSON agent options, e.g. '{\"explore\": 0.05}'"
    )
    parser.add_argument("--nsgym", action="store_true", help="NS-Gym's wrappers, via from_nsgym")
    parser.add_argument(
        "--notify", default="nsgym", help="from_nsgym's notify: nsgym, value, flag or none"
    )
    args = parser.parse_args()
    options = json.loads(args.options)
    world = f"NS-Gym (notify {args.notify})" if args.nsgym else "NonStationary"
    print(f"reward {args.reward}, options {options}, {world}")
    for name in args.agents:
        for seed in args.seeds:
            lengths, ends, ess, per_act = run(
                name, seed, args.episodes, args.reward, options, args.nsgym, args.notify
            )
            first = next((k + 1 for k, n in enumerate(lengths) if n >= 500), None)
            shown = [f"{n}{end}" for n, end in zip(lengths, ends, strict=True)]
            print(
                f"{name} seed {seed}: lengths {shown}; first 500 at episode {first}; "
                f"ESS {ess:.1f}; {1e3 * per_act:.2f} ms per act",
                flush=True,
            )
        print(flush=True)


if __name__ == "__main__":
    main()
