"""The vectorised classic-control equations (issue 41) against the environments' ``step``:
from random states and actions, one step of the model gives the environment's next state."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from bam_rl.agents import GroundTruthMPPI
from bam_rl.agents.classic_models import (
    CLASSIC_ENV_IDS,
    CLASSIC_MODELS,
    CartPoleModel,
    MountainCarContinuousModel,
    PendulumModel,
    classic_model_for,
)


def _random_state(env_id: str, rng: np.random.Generator) -> np.ndarray:
    if env_id == "CartPole-v1":
        return rng.uniform([-2.4, -3, -0.25, -3], [2.4, 3, 0.25, 3])
    if env_id == "Pendulum-v1":
        return rng.uniform([-np.pi, -8], [np.pi, 8])
    return rng.uniform([-1.2, -0.07], [0.6, 0.07]).astype(np.float32)


@pytest.mark.parametrize(
    ("env_id", "kind", "changes"),
    [
        ("CartPole-v1", CartPoleModel, {"masspole": 1.0, "length": 0.7}),
        ("Pendulum-v1", PendulumModel, {"g": 3.72, "m": 1.3}),
        ("MountainCarContinuous-v0", MountainCarContinuousModel, {"power": 0.002}),
    ],
)
def test_one_step_matches_the_environment(env_id, kind, changes):
    env = gym.make(env_id)
    env.reset(seed=0)
    base = env.unwrapped
    for name, value in changes.items():
        setattr(base, name, value)
    if env_id == "CartPole-v1":
        base.total_mass = base.masspole + base.masscart
        base.polemass_length = base.masspole * base.length
    model = classic_model_for(env)
    assert isinstance(model, kind)
    rng = np.random.default_rng(1)
    for _ in range(200):
        state = _random_state(env_id, rng)
        action = env.action_space.sample()
        base.state = state.copy()
        env.step(action)
        if kind is CartPoleModel:
            one_hot = np.eye(2)[[int(action)]]
            expected, got = base.state, model.step(state[None], one_hot)[0]
        else:
            expected, got = base.state, model.step(state[None], np.asarray(action)[None])[0]
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)


def test_rollout_observations_follow_the_environment():
    env = gym.make("Pendulum-v1")
    obs, _ = env.reset(seed=3)
    model = classic_model_for(env)
    actions = np.random.default_rng(0).uniform(-2, 2, (1, 20, 1)).astype(np.float32)
    predicted = model(obs, actions)
    base = env.unwrapped
    base.state = model.state_of_observation(obs)  # the observation's float32 angle
    for t in range(20):
        observation = env.step(actions[0, t])[0]
        np.testing.assert_allclose(predicted[0, t], observation, atol=1e-5)
    with pytest.raises(ValueError, match="actions must have shape"):
        model(obs, actions[..., :0])


def test_no_model_for_other_environments():
    assert classic_model_for(gym.make("Acrobot-v1")) is None


def test_the_listed_ids_are_the_modelled_classes():
    classes = set()
    for env_id in CLASSIC_ENV_IDS:
        env = gym.make(env_id)
        classes.add(type(env.unwrapped).__name__)
        env.close()
    assert classes == set(CLASSIC_MODELS)


@pytest.mark.parametrize("env_id", ["Acrobot-v1", "MountainCar-v0"])
def test_ground_truth_on_an_unmodelled_classic_env_lists_the_supported_ones(env_id):
    env = gym.make(env_id)
    with pytest.raises(ValueError, match="Gymnasium MuJoCo environment") as error:
        GroundTruthMPPI(env, seed=0)
    message = str(error.value)
    assert all(supported in message for supported in CLASSIC_ENV_IDS)
