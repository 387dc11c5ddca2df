"""docs/experiments.md: Held-out prediction error of the cart-pole's RFF dynamics model, with and
without the cart position among the random features' inputs (docs/experiments.md, "The model and
the planner").

A recursive-Bayes MPPI learner (the paper's model) runs one more trial than the largest
``--fitted`` count at one gravity;
for ``k`` in ``--fitted`` each model is fitted to the first ``k`` trials and scored on trial
``k + 1``: the relative one-step error (``RFFDynamicsModel.one_step_error``) and the median
pole-angle error of 50-step open-loop rollouts of the posterior mean model under the trial's
own actions, started every 10 steps. The rail is unlimited and frictionless, so the dynamics
do not depend on the cart position (state 0); ``feature_states=(1, 2, 3, 4)`` leaves it out
of the features (the model still predicts it). About 15 s on one core::

    MUJOCO_GL=egl python scripts/experiments/model_heldout_error.py [--gravity 9.81] [--seed 100]

``--task inverted-pendulum`` measures InvertedPendulum-v5 (issue 41, docs/any_env.md): a
recursive-Bayes learner (``"inverted-pendulum"`` reward, posterior-mean planning, H = 25,
temperature 0.01) runs 10 trials and the ground-truth planner one 400-step balancing
trajectory; the 200-feature RFF model and a least-squares linear model fitted to the first
``k`` learner trials are scored by their one-step error per state component (on the held-out
trial 10 and on the balancing trajectory), and each fixed model is given to MPPI (K = 32) at
several horizons, reporting the steps it holds the pole (of 400) on three fresh episodes.
About a minute on one core::

    MUJOCO_GL=egl python scripts/experiments/model_heldout_error.py \\
        --task inverted-pendulum --seed 100

``--task half-cheetah`` (issue 53, beyond the paper; ``half_cheetah_error.py`` beside this
file) scores the paper's 200-feature model against the normalised model
(:class:`~bam_rl.agents.normalized_dynamics.NormalizedRFFDynamicsModel`) on held-out
random-action transitions of HalfCheetah-v5: normalised one-step error (per-component RMSE /
target standard deviation, root mean square over the 17 components: 1 is predicting the
mean) and the variance unexplained (per-component MSE / target variance, averaged),
per-dimension length-scale rules, bandwidths, feature counts and the readout's cost::

    MUJOCO_GL=egl python scripts/experiments/model_heldout_error.py --task half-cheetah
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import MPPIAgent
from bam_rl.agents.dynamics import RFFDynamicsModel
from bam_rl.experiments.cartpole_readout import run_trial

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


def _episode(env: gym.Env, agent: object, seed: int | None, max_steps: int) -> tuple:
    """``(states, actions)`` of one episode of ``agent`` (at most ``max_steps`` steps)."""
    observation, info = env.reset(seed=seed)
    agent.reset(observation, info)  # type: ignore[attr-defined]
    states, actions = [observation], []
    for _ in range(max_steps):
        action = agent.act(observation)  # type: ignore[attr-defined]
        observation, reward, terminated, truncated, info = env.step(action)
        agent.observe(action, reward, observation, terminated, truncated, info)  # type: ignore[attr-defined]
        states.append(observation)
        actions.append(np.atleast_1d(action))
        if terminated or truncated:
            break
    return np.array(states), np.array(actions, dtype=np.float64)


class _LinearModel:
    """Least-squares ``Δx = W [x, a, 1]`` as a dynamics callable (a reference model)."""

    def __init__(self, trials: list[tuple[np.ndarray, ...]]):
        inputs = np.concatenate([np.c_[s[:-1], a, np.ones(len(a))] for s, a in trials])
        deltas = np.concatenate([np.diff(s, axis=0) for s, _ in trials])
        self.weights = np.linalg.lstsq(inputs, deltas, rcond=None)[0]

    def deltas(self, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
        return np.c_[states, actions, np.ones(len(states))] @ self.weights

    def __call__(self, state: np.ndarray, actions: np.ndarray, rng: object) -> np.ndarray:
        k, h, _ = actions.shape
        x = np.broadcast_to(state, (k, state.shape[0])).copy()
        out = np.empty((k, h, state.shape[0]))
        for t in range(h):
            x = x + self.deltas(x, actions[:, t])
            out[:, t] = x
        return out


def _held_steps(model: object, seed: int, horizon: int, steps: int = 400) -> int:
    """Steps InvertedPendulum-v5 holds under MPPI (K = 32, temperature 0.01) with a fixed
    dynamics model."""
    from bam_rl.agents.planner import MPPI
    from bam_rl.agents.rewards import make_planning_reward

    env = gym.make("InvertedPendulum-v5")
    reward, _ = make_planning_reward("inverted-pendulum", env.observation_space, env.action_space)
    planner = MPPI(
        model,
        reward,
        action_dim=1,
        action_low=-3.0,
        action_high=3.0,
        horizon=horizon,
        temperature=0.01,
        seed=seed,
    )
    observation, _ = env.reset(seed=seed)
    for step in range(steps):
        observation, _, terminated, truncated, _ = env.step(planner.plan(observation))
        if terminated or truncated:
            return step + 1
    return steps


def inverted_pendulum(seed: int) -> None:
    """The InvertedPendulum-v5 measurement (``--task inverted-pendulum``)."""
    from bam_rl.agents.mppi import GroundTruthMPPI
    from bam_rl.harness.registry import make_agent

    env = gym.make("InvertedPendulum-v5")
    options = {"planning_models": "mean", "horizon": 25, "temperature": 0.01}
    learner = make_agent(
        "mppi-recursive", env, seed=seed, reward="inverted-pendulum", announced=True, **options
    )
    trials = [_episode(env, learner, seed if i == 0 else None, 1000) for i in range(10)]
    print("learner's steps per trial:", [len(a) for _, a in trials], flush=True)
    truth = GroundTruthMPPI(
        env, seed=seed, reward="inverted-pendulum", horizon=25, temperature=0.01
    )
    balanced = _episode(env, truth, seed + 1, 400)
    print(f"ground truth's balancing trajectory: {len(balanced[1])} steps", flush=True)

    def component_errors(deltas: np.ndarray, states: np.ndarray) -> str:
        true = np.diff(states, axis=0)
        errors = np.linalg.norm(deltas - true, axis=0) / np.linalg.norm(true, axis=0)
        return "(" + ", ".join(f"{e:.3f}" for e in errors) + ")"

    for k in (5, 9):
        rff = RFFDynamicsModel(4, 1, seed=0, planning_models="mean")
        belief = rff.family.prior
        for states, actions in trials[:k]:
            belief = belief + rff.stats(states, actions)
        rff.set_belief(belief)
        linear = _LinearModel(trials[:k])
        for name, model in (("RFF, 200 features", rff), ("linear least squares", linear)):
            cells = []
            for label, (states, actions) in (
                ("held-out trial", trials[k]),
                ("balancing", balanced),
            ):
                if isinstance(model, RFFDynamicsModel):
                    deltas = model.predict(states[:-1], actions) - states[:-1]
                else:
                    deltas = model.deltas(states[:-1], actions)
                cells.append(f"{label} {component_errors(deltas, states)}")
            print(f"k = {k}, {name}: one-step error (x, θ, ẋ, θ̇): " + "; ".join(cells))
            for horizon in (10, 15, 25):
                held = [_held_steps(model, s, horizon) for s in (seed + 2, seed + 3, seed + 4)]
                print(
                    f"    MPPI with this fixed model, H = {horizon}: held {held} of 400", flush=True
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--task", choices=("cartpole", "inverted-pendulum", "half-cheetah"), default="cartpole"
    )
    parser.add_argument("--gravity", type=float, default=9.81)
    parser.add_argument("--seed", type=int, default=100, help="the learner's and the env's seed")
    parser.add_argument("--fitted", default="4,8,15", help="trial counts to fit, comma-separated")
    parser.add_argument("--feature-seeds", type=int, default=3)
    args = parser.parse_args()
    if args.task == "inverted-pendulum":
        inverted_pendulum(args.seed)
        return
    if args.task == "half-cheetah":
        from half_cheetah_error import half_cheetah

        half_cheetah(args.seed)
        return
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
