"""docs/experiments.md: Replan trials of the episodic cart-pole many times from their own start
state and belief.

Runs a learner of ``bam-rl reproduce cartpole-episodic`` (seed index ``--seed``, the
reproduction's seeds and options) up to each trial of ``--trials`` and, there, plans that trial
``--reps`` times with a copy of the agent whose generator is reseeded (other planner draws
only: same belief, same start state), and ``--reps`` times with GT MPC from the same state.
Then it goes on with the original agent, whose score of the trial is printed as ``actual`` (the
reproduction's own, run for run, unless ``--option`` changes the learner).
``--option name=value`` (repeatable) changes the learner's options, e.g. to the paper's model
and planner; ``--replan-planning draws,mean`` replans with each way of rolling out the model
(``RFFDynamicsModel.planning_models``; the copies only, the run is the learner's own).
docs/experiments.md quotes it for segment BAM's missed second trials of a revisit with the
paper's model (trials 46 and 76 of seeds 0 and 1), and for the same trials with the features
blind to the cart position (``--option planning_models=draws`` alone)::

    MUJOCO_GL=egl python scripts/experiments/segment_replan.py --seed 0 --trials 46,76 \
        --option feature_states=None --option planning_models=draws --replan-planning draws,mean

Per target trial, ten GT MPC repetitions take about 1.2 min on one core and ten of the
learner's about 10 s for each planning, plus the run up to the trial: 4–6 min for the command
above.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents.dynamics import PLANNING_MODELS
from bam_rl.experiments import cartpole_readout
from bam_rl.experiments.cartpole import SETTINGS
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


def option(text: str) -> tuple[str, Any]:
    """``name=value``: a Python literal (``feature_states=(1, 2, 3, 4)``, ``None``), else the
    text itself (``planning_models=draws``)."""
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"expected name=value, got {text!r}")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value


def plannings(text: str) -> list[str]:
    """Comma-separated ``planning_models`` values, each one of ``PLANNING_MODELS``."""
    names = text.split(",")
    unknown = [name for name in names if name not in PLANNING_MODELS]
    if unknown:
        raise argparse.ArgumentTypeError(f"{unknown} not among {PLANNING_MODELS}")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="seed index of the reproduction")
    parser.add_argument("--trials", required=True, help="0-based trials, comma-separated")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--method", default="bam_segments", help="an episodic method's label")
    parser.add_argument("--json", type=Path, help="also write the scores here")
    parser.add_argument(
        "--option", type=option, action="append", default=[], help="learner option name=value"
    )
    parser.add_argument(
        "--replan-planning",
        type=plannings,
        default=None,
        help="replan with these planning_models, comma-separated (default: the learner's)",
    )
    args = parser.parse_args()
    targets = sorted(int(t) for t in args.trials.split(","))
    name, kwargs = SETTINGS["episodic"]["methods"][args.method]
    kwargs = {**kwargs, **dict(args.option)}
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
    replannings = args.replan_planning or [agent.model.planning_models]
    scores: dict[str, dict[str, Any]] = {}
    for trial in range(targets[-1] + 1):
        if trial in targets:
            base = env.unwrapped
            start = (base.data.qpos.copy(), base.data.qvel.copy())  # type: ignore[attr-defined]
            snapshot = copy.deepcopy(agent)

            def learner(k: int, planning: str, snapshot: Any = snapshot) -> Any:
                copied = copy.deepcopy(snapshot)
                copied.rng = np.random.default_rng(10_000 + k)
                copied.model.planning_models = planning
                return copied

            ours = {
                planning: [
                    replan(trial, start, info, lambda k=k, p=planning: learner(k, p))
                    for k in range(args.reps)
                ]
                for planning in replannings
            }
            gt = [
                replan(trial, start, info, lambda k=k: make_agent("mppi-gt", env, 20_000 + k))
                for k in range(args.reps)
            ]
            scores[str(trial)] = {"agent": ours, "gt": gt}
        score, observation, info = run_trial(env, agent, observation, info)
        if trial in targets:
            true = np.array(scores[str(trial)]["gt"])
            scores[str(trial)]["actual"] = score
            print(
                f"seed {args.seed} trial {trial} (g = {info['gravity']}): actual {score:.2f}; "
                f"GT MPC median {np.median(true):.2f}, "
                f"falls {np.round(true[true < 0.1], 2).tolist()}",
                flush=True,
            )
            for planning, replans in scores[str(trial)]["agent"].items():
                mine = np.array(replans)
                print(
                    f"    {args.method} planning with {planning}: median {np.median(mine):.2f}, "
                    f"falls (< 0.1) {np.round(mine[mine < 0.1], 2).tolist()}, at >= 0.9 x GT's "
                    f"median {int((mine >= 0.9 * np.median(true)).sum())} of {mine.size}",
                    flush=True,
                )
        if trial < targets[-1]:
            observation, info = env.reset()
    if args.json:
        args.json.write_text(json.dumps(scores, indent=1))


if __name__ == "__main__":
    main()
