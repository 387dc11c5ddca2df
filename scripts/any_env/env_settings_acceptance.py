"""docs/any_env.md: Agents built from the environment alone (issue 51): each task's agent comes
through one door with no setting given, so the settings are the environment's row of
``bam_rl.agents.settings.ENV_SETTINGS`` (``docs/env_settings.md``).

``python scripts/any_env/env_settings_acceptance.py --task inverted-pendulum --seeds 0 1 2`` prints
one JSON line per (task, seed). Tasks:

* ``inverted-pendulum``: ``make_agent("mppi-bam-segments", env, announced=True)`` on
  InvertedPendulum-v5, gravity 9.81/3.72 every 5 episodes; steps held per episode (of 1000),
  episodes 0-10 (10 is the return to 9.81).
* ``pendulum``: ``make_agent("mppi-bam-segments", env)`` on Pendulum-v1, g 10/3.72 every 3
  episodes, episodes 0-6 (6 is the revisit), and ``GroundTruthMPPI(env)`` from the same start
  states; returns per episode.
* ``cartpole``: ``make_agent("mppi-bam-segments", env)`` on CartPole-v1 with pole mass 1.0;
  steps per episode, 10 episodes.
* ``double-pendulum-gt``: ``GroundTruthMPPI(env)`` on InvertedDoublePendulum-v5, gravity 9.81
  then 14 from step 300 (a step schedule); steps held of 1000.

``--no-rows`` removes the environments' rows first: the generic defaults, with the rows'
planning rewards given (a reward is the user's choice; none is generic).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from typing import Any

import gymnasium as gym

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import GroundTruthMPPI, settings
from bam_rl.harness.registry import make_agent
from bam_rl.schedules import cycle, piecewise
from bam_rl.wrappers import NonStationary


def episode(env: Any, agent: Any, seed: int | None) -> tuple[float, int]:
    """One episode: its return and its steps."""
    observation, info = env.reset(seed=seed)
    agent.reset(observation, info)
    total, steps, done = 0.0, 0, False
    while not done:
        action = agent.act(observation)
        observation, reward, terminated, truncated, info = env.step(action)
        agent.observe(action, reward, observation, terminated, truncated, info)
        total, steps, done = total + float(reward), steps + 1, terminated or truncated
    return total, steps


#: ``--no-rows``: the planning rewards the rows gave (a reward is the user's to choose; the
#: generic defaults have none on these observations), by environment id and kind.
REWARDS: dict[tuple[str, str], str] = {
    (env_id, kind): str(row.options(kind)["reward"])
    for env_id, row in settings.ENV_SETTINGS.items()
    for kind in ("learned", "gt")
}
NO_ROWS = False


def reward(env_id: str, kind: str = "learned") -> dict[str, Any]:
    """``{"reward": the row's}`` with ``--no-rows``, else nothing (the row gives it)."""
    return {"reward": REWARDS[env_id, kind]} if NO_ROWS else {}


def run(task: str, seed: int) -> dict[str, Any]:
    started = time.perf_counter()
    row: dict[str, Any] = {"task": task, "seed": seed}
    if task == "inverted-pendulum":
        env = NonStationary(
            gym.make("InvertedPendulum-v5"), {"gravity": cycle([9.81, 3.72], every=5)}
        )
        agent = make_agent(
            "mppi-bam-segments", env, seed, announced=True, **reward("InvertedPendulum-v5")
        )
        row["steps"] = [episode(env, agent, seed if k == 0 else None)[1] for k in range(11)]
        row["pass"] = row["steps"][10] == 1000 and 1000 in row["steps"][:10]
    elif task == "pendulum":
        worlds = {"g": cycle([10.0, 3.72], every=3)}
        env = NonStationary(gym.make("Pendulum-v1"), worlds)
        agent = make_agent("mppi-bam-segments", env, seed, **reward("Pendulum-v1"))
        row["returns"] = [
            round(episode(env, agent, seed if k == 0 else None)[0], 1) for k in range(7)
        ]
        truth_env = NonStationary(gym.make("Pendulum-v1"), worlds)
        truth = GroundTruthMPPI(truth_env, seed=seed, **reward("Pendulum-v1", "gt"))
        row["gt"] = [
            round(episode(truth_env, truth, seed if k == 0 else None)[0], 1) for k in range(7)
        ]

        def met(k: int) -> bool:
            ret, gt = row["returns"][k], row["gt"][k]
            return ret >= -200 or ret >= 1.25 * gt  # costs: within 1.25 x GT's

        row["pass"] = any(met(k) for k in range(4)) and met(6)
    elif task == "cartpole":
        env = NonStationary(gym.make("CartPole-v1"), {"masspole": piecewise({0: 1.0})})
        agent = make_agent("mppi-bam-segments", env, seed, **reward("CartPole-v1"))
        row["steps"] = [episode(env, agent, seed if k == 0 else None)[1] for k in range(10)]
        row["pass"] = 500 in row["steps"]
    elif task == "double-pendulum-gt":
        env = NonStationary(
            gym.make("InvertedDoublePendulum-v5"),
            {"gravity": piecewise({0: 9.81, 300: 14.0}, unit="step")},
        )
        agent = GroundTruthMPPI(env, seed=seed, **reward("InvertedDoublePendulum-v5", "gt"))
        row["steps"] = episode(env, agent, seed)[1]
        row["pass"] = row["steps"] == 1000
    else:
        raise ValueError(f"unknown task {task!r}")
    row["seconds"] = round(time.perf_counter() - started, 1)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--task",
        action="append",
        choices=("inverted-pendulum", "pendulum", "cartpole", "double-pendulum-gt"),
        required=True,
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--no-rows", action="store_true", help="the generic defaults alone")
    args = parser.parse_args()
    if args.no_rows:  # the rows removed: the generic defaults, the rows' rewards given
        global NO_ROWS
        NO_ROWS = True
        settings.ENV_SETTINGS = {}  # type: ignore[misc]
        warnings.simplefilter("ignore")
    for task in args.task:
        for seed in args.seeds:
            row = run(task, seed)
            row["rows"] = not args.no_rows
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
