"""Replan one trial of the episodic cart-pole many times from its own start state and belief.

Runs a learner of ``bam-rl reproduce cartpole-episodic`` (seed index ``--seed``, the
reproduction's seeds and options) up to each trial of ``--trials`` and, there, plans that trial
``--reps`` times with a copy of the agent whose generator is reseeded (other planner draws
only: same belief, same start state), and ``--reps`` times with GT MPC from the same state.
Then it goes on with the original agent, whose score of the trial is printed as ``actual`` (the
reproduction's own, run for run). docs/experiments.md quotes it for segment BAM's missed second
trials of a revisit (trials 46 and 76 of seeds 0 and 1)::

    MUJOCO_GL=egl python scripts/segment_replan.py --seed 0 --trials 46,76 [--reps 10]

About 1.5 min a target trial with ten repetitions on one core, plus the run up to it.
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.harness.experiments import cartpole_readout
from bam_rl.harness.experiments.cartpole import SETTINGS
from bam_rl.harness.registry import make_agent
from bam_rl.harness.sweeps import RunSpec

ENV_ID = SETTINGS["episodic"]["env_id"]


def run_trial(env: gym.Env, agent: Any, observation: np.ndarray, info: dict) -> tuple:
    """One trial from ``observation`` (the agent told it starts): its mean reward over all its
    steps, the last observation and info (``cartpole_readout.run_trial``'s loop)."""
    agent.reset(observation, info)
    _, states, _, rewards, info = cartpole_readout.run_trial(env, agent, observation, info)
    return float(np.mean(rewards)), states[-1], info


def replan(trial: int, start: tuple[np.ndarray, np.ndarray], info: dict, build: Any) -> float:
    """The trial planned by ``build()``'s agent from the state ``start`` (qpos, qvel)."""
    env = gym.make(ENV_ID)
    env.reset(seed=0, options={"trial": trial})
    base = env.unwrapped
    base.set_state(*start)  # type: ignore[attr-defined]
    return run_trial(env, build(), base._get_obs(), dict(info))[0]  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="seed index of the reproduction")
    parser.add_argument("--trials", required=True, help="0-based trials, comma-separated")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--method", default="bam_segments", help="an episodic method's label")
    parser.add_argument("--json", type=Path, help="also write the scores here")
    args = parser.parse_args()
    targets = sorted(int(t) for t in args.trials.split(","))
    name, kwargs = SETTINGS["episodic"]["methods"][args.method]
    spec = RunSpec(
        method=args.method,
        env_id=ENV_ID,
        agent_kwargs=kwargs,
        config="episodic",
        seed_index=args.seed,
        n_episodes=90,
        agent=name,
    )
    env_seed, agent_seed = spec.seeds()  # the reproduction's seeds for this run
    env = gym.make(ENV_ID)
    agent = make_agent(name, env, agent_seed, **kwargs)
    observation, info = env.reset(seed=env_seed)
    scores: dict[str, dict[str, Any]] = {}
    for trial in range(targets[-1] + 1):
        if trial in targets:
            base = env.unwrapped
            start = (base.data.qpos.copy(), base.data.qvel.copy())  # type: ignore[attr-defined]
            snapshot = copy.deepcopy(agent)

            def learner(k: int, snapshot: Any = snapshot) -> Any:
                copied = copy.deepcopy(snapshot)
                copied.rng = np.random.default_rng(10_000 + k)
                return copied

            ours = [replan(trial, start, info, lambda k=k: learner(k)) for k in range(args.reps)]
            gt = [
                replan(trial, start, info, lambda k=k: make_agent("mppi-gt", env, 20_000 + k))
                for k in range(args.reps)
            ]
            scores[str(trial)] = {"agent": ours, "gt": gt}
        score, observation, info = run_trial(env, agent, observation, info)
        if trial in targets:
            mine, true = np.array(scores[str(trial)]["agent"]), np.array(scores[str(trial)]["gt"])
            scores[str(trial)]["actual"] = score
            print(
                f"seed {args.seed} trial {trial} (g = {info['gravity']}): actual {score:.2f}; "
                f"{args.method} median {np.median(mine):.2f}, falls (< 0.1) "
                f"{np.round(mine[mine < 0.1], 2).tolist()}, at >= 0.9 x GT's median "
                f"{int((mine >= 0.9 * np.median(true)).sum())} of {mine.size}; GT MPC median "
                f"{np.median(true):.2f}, falls {np.round(true[true < 0.1], 2).tolist()}",
                flush=True,
            )
        if trial < targets[-1]:
            observation, info = env.reset()
    if args.json:
        args.json.write_text(json.dumps(scores, indent=1))


if __name__ == "__main__":
    main()
