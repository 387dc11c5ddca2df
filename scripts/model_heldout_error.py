"""Held-out prediction error of the cart-pole's RFF dynamics model, with and without the cart
position among the random features' inputs (docs/experiments.md, "The model and the planner").

A recursive-Bayes MPPI learner (the paper's model) runs one more trial than the largest
``--fitted`` count at one gravity;
for ``k`` in ``--fitted`` each model is fitted to the first ``k`` trials and scored on trial
``k + 1``: the relative one-step error (``RFFDynamicsModel.one_step_error``) and the median
pole-angle error of 50-step open-loop rollouts of the posterior mean model under the trial's
own actions, started every 10 steps. The rail is unlimited and frictionless, so the dynamics
do not depend on the cart position (state 0); ``feature_states=(1, 2, 3, 4)`` leaves it out
of the features (the model still predicts it). About 15 s on one core::

    MUJOCO_GL=egl python scripts/model_heldout_error.py [--gravity 9.81] [--seed 100]
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import MPPIAgent
from bam_rl.agents.dynamics import RFFDynamicsModel
from bam_rl.harness.experiments.cartpole_readout import run_trial

HORIZON = 50


def learner_trials(gravity: float, seed: int, n_trials: int) -> list[tuple[np.ndarray, ...]]:
    """``(states, actions)`` of ``n_trials`` trials of a recursive-Bayes MPPI learner."""
    env = gym.make("bam_rl/GravityCartPole-v0", gravity_schedule=(gravity,) * n_trials)
    agent = MPPIAgent(
        env.observation_space, env.action_space, memory="recursive", seed=seed, announced=True
    )
    observation, info = env.reset(seed=seed)
    trials = []
    for _ in range(n_trials):
        agent.reset(observation, info)
        _, states, actions, _, info = run_trial(env, agent, observation, info)
        trials.append((states, actions))
        observation, info = env.reset()
    return trials


def angle_errors(model: RFFDynamicsModel, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Absolute pole-angle errors of 50-step mean-model rollouts started every 10 steps
    (at steps 0, 10, ..., 140 of a 200-step trial)."""
    mean = model.mean_model()[None]
    errors = []
    for start in range(0, len(actions) - HORIZON, 10):
        plan = actions[None, start : start + HORIZON]
        rollout = model.simulate(states[start], plan, mean, np.zeros((HORIZON, 1, 5)))[0]
        reached = states[start + 1 : start + HORIZON + 1]
        predicted = np.arctan2(rollout[:, 3], rollout[:, 2])
        error = np.abs(predicted - np.arctan2(reached[:, 3], reached[:, 2])) % (2 * np.pi)
        errors.append(np.minimum(error, 2 * np.pi - error))
    return np.concatenate(errors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gravity", type=float, default=9.81)
    parser.add_argument("--seed", type=int, default=100, help="the learner's and the env's seed")
    parser.add_argument("--fitted", default="4,8,15", help="trial counts to fit, comma-separated")
    parser.add_argument("--feature-seeds", type=int, default=3)
    args = parser.parse_args()
    fitted = [int(k) for k in args.fitted.split(",")]
    trials = learner_trials(args.gravity, args.seed, max(fitted) + 1)
    for feature_states, name in ((None, "whole state"), ((1, 2, 3, 4), "blind to the cart")):
        for feature_seed in range(args.feature_seeds):
            model = RFFDynamicsModel(
                5, 1, seed=feature_seed, feature_states=feature_states, angle_pairs=((2, 3),)
            )
            cells = []
            for k in fitted:
                belief = model.family.prior
                for states, actions in trials[:k]:
                    belief = belief + model.stats(states, actions)
                model.set_belief(belief)
                states, actions = trials[k]
                one_step = model.one_step_error(states, actions)
                angle = float(np.median(angle_errors(model, states, actions)))
                cells.append(f"k = {k}: one-step {one_step:.3f}, 50-step angle {angle:.3f}")
            print(f"{name:18s} features seed {feature_seed}: " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
