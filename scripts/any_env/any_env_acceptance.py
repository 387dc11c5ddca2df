"""docs/any_env.md: Issue 41's acceptance on Gymnasium environments: MPPI agents from the registry
on worlds the ``NonStationary`` wrapper changes between episodes (announced: ``notify="value"``).

Tasks:

* ``inverted-pendulum``: InvertedPendulum-v5 (1000-step episodes), gravity 9.81 for trials
  0-4, 3.72 for 5-9, 9.81 for 10-14 (``cycle([9.81, 3.72], every=5)``); the planning reward is
  the registry's ``"inverted-pendulum"``. Reported: steps survived per trial.
* ``pendulum``: Pendulum-v1 swing-up (200-step episodes), ``g`` 10 for trials 0-2, 3.72 for
  3-5, 10 for 6-8, ... (``cycle([10, 3.72], every=3)``); reward ``"pendulum-swingup"``.
  Reported: the return per trial.

``--nsgym`` builds the same worlds with NS-Gym's own wrappers instead (``MujocoWrapper`` /
``NSClassicControlWrapper`` with ``persistent_params=True``, a ``CustomScheduler`` firing at
each episode's first step and a ``StepWiseUpdate`` holding the episodes' values; MuJoCo's
gravity as its z component), through :func:`bam_rl.interop.nsgym.from_nsgym` with NS-Gym's
detailed notification; it needs ns-gym installed.

Each run prints one JSON line per (task, method, seed) as it ends (``--out`` appends them to a
file too), then a table of every trial's value per method (mean over seeds and per seed)::

    python scripts/any_env/any_env_acceptance.py --task inverted-pendulum --seeds 0 1 2 3 4 \
        --methods mppi-bam-segments mppi-recursive mppi-bocd --out ip.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import gymnasium as gym
import numpy as np

from bam_rl.harness.registry import make_agent
from bam_rl.schedules import cycle
from bam_rl.wrappers import NonStationary

#: task -> (environment id, parameter, its values in turn, episodes each, reward, trials)
TASKS: dict[str, tuple[str, str, list[float], int, str, int]] = {
    "inverted-pendulum": (
        "InvertedPendulum-v5",
        "gravity",
        [9.81, 3.72],
        5,
        "inverted-pendulum",
        15,
    ),
    "pendulum": ("Pendulum-v1", "g", [10.0, 3.72], 3, "pendulum-swingup", 12),
}
METHODS = ("mppi-bam-segments", "mppi-recursive", "mppi-bocd")


def make_env(task: str, n_trials: int, nsgym: bool = False) -> gym.Env:
    """The task's world: the ``NonStationary`` wrapper (announced), or NS-Gym's wrappers."""
    env_id, name, values, every, _, _ = TASKS[task]
    if not nsgym:
        return NonStationary(gym.make(env_id), {name: cycle(values, every=every)}, notify="value")
    from ns_gym.schedulers import CustomScheduler
    from ns_gym.update_functions import StepWiseUpdate
    from ns_gym.wrappers import MujocoWrapper, NSClassicControlWrapper

    from bam_rl.interop.nsgym import from_nsgym

    per_episode = [values[(trial // every) % len(values)] for trial in range(n_trials)]
    if name == "gravity":  # NS-Gym updates MuJoCo's gravity through its z component
        per_episode = [-value for value in per_episode]
    # NS-Gym's clock restarts at every reset: an update at t = 0 fires on each episode's first
    # step, taking the next value; persistent_params keeps it past the reset
    update = StepWiseUpdate(CustomScheduler(lambda t: t == 0), per_episode)
    wrapper = MujocoWrapper if name == "gravity" else NSClassicControlWrapper
    ns_env = wrapper(
        gym.make(env_id),
        {name: update},
        change_notification=True,
        delta_change_notification=True,
        persistent_params=True,
    )
    return from_nsgym(ns_env)


def run(
    task: str,
    method: str,
    seed: int,
    n_trials: int,
    options: dict[str, Any],
    nsgym: bool = False,
) -> dict:
    """One agent's trials on the task: per trial steps, return and the world's value."""
    _, name, _, _, reward, _ = TASKS[task]
    env = make_env(task, n_trials, nsgym)
    learner = {} if method == "mppi-gt" else {"announced": True}  # GT learns nothing
    agent = make_agent(method, env, seed=seed, reward=reward, **learner, **options)
    steps, returns, worlds = [], [], []
    start = time.perf_counter()
    for trial in range(n_trials):
        obs, info = env.reset(seed=seed if trial == 0 else None)
        agent.reset(obs, info)
        total, done, t = 0.0, False, 0
        while not done:
            action = agent.act(obs)
            obs, r, terminated, truncated, info = env.step(action)
            agent.observe(action, r, obs, terminated, truncated, info)
            total, done, t = total + float(r), terminated or truncated, t + 1
        steps.append(t)
        returns.append(round(total, 1))
        worlds.append(info["context"][name])
    return {
        "task": task,
        "method": method,
        "seed": seed,
        "nsgym": nsgym,
        "options": options,
        "steps": steps,
        "returns": returns,
        "world": worlds,
        "trial_gravities": [float(g) for g in getattr(agent, "trial_gravities", [])],
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=sorted(TASKS), required=True)
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--trials", type=int, default=None, help="default: the task's")
    parser.add_argument("--options", default="{}", help="agent keyword arguments (JSON)")
    parser.add_argument("--out", default=None, help="append the JSON lines to this file")
    parser.add_argument("--nsgym", action="store_true", help="NS-Gym's wrappers, via from_nsgym")
    args = parser.parse_args()
    n_trials = args.trials or TASKS[args.task][5]
    options = json.loads(args.options)
    key = "steps" if args.task == "inverted-pendulum" else "returns"
    table: dict[str, list[list[float]]] = {}
    for method in args.methods:
        for seed in args.seeds:
            row = run(args.task, method, seed, n_trials, options, args.nsgym)
            line = json.dumps(row)
            print(line, flush=True)
            if args.out:
                with open(args.out, "a") as handle:
                    handle.write(line + "\n")
            table.setdefault(method, []).append(row[key])
    print(f"\n{args.task}: {key} per trial (seeds {args.seeds})")
    for method, rows in table.items():
        mean = np.mean(rows, axis=0)
        print(f"{method:18s} mean " + " ".join(f"{v:7.0f}" for v in mean))
        for seed, values in zip(args.seeds, rows, strict=True):
            print(f"{'':18s} s{seed:<3d} " + " ".join(f"{v:7.0f}" for v in values))


if __name__ == "__main__":
    main()
