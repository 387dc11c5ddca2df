"""Ground truth over ``mujoco.rollout`` (issue 53): ``MujocoEnvDynamics``'s batched rollouts give
``env.step``'s observations to 1e-12 after gravity and mass changes (InvertedPendulum-v5 with
frame skip 2, InvertedDoublePendulum-v5 with 5, its cart driven into the rail's ends so the
observed constraint force is nonzero, HalfCheetah-v5 with contacts), and an environment whose
observation is not known from its physics state keeps the loop."""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import bam_rl  # noqa: F401
from bam_rl.agents.simulator import MujocoEnvDynamics
from bam_rl.schedules import piecewise
from bam_rl.wrappers import NonStationary


def _stepped(env, actions):
    """``env.step``'s observations under every sequence of ``actions``, each from the live
    state (restored afterwards)."""
    base = env.unwrapped
    saved = mujoco.MjData(base.model)
    mujoco.mj_copyData(saved, base.model, base.data)
    out = np.empty((*actions.shape[:2], base.observation_space.shape[0]))
    for i, sequence in enumerate(actions):
        mujoco.mj_copyData(base.data, base.model, saved)
        for t, action in enumerate(sequence):
            out[i, t] = base.step(action)[0]
    mujoco.mj_copyData(base.data, base.model, saved)
    return out


@pytest.mark.parametrize(
    ("env_id", "push"),
    [
        ("InvertedPendulum-v5", 0.0),
        ("InvertedDoublePendulum-v5", 0.0),
        ("InvertedDoublePendulum-v5", 0.7),
        ("HalfCheetah-v5", 0.0),
    ],
)
def test_batched_rollouts_are_env_step_after_gravity_and_mass_changes(env_id, push):
    base_env = gym.make(env_id)
    last_body = base_env.unwrapped.model.body(base_env.unwrapped.model.nbody - 1).name
    mass = float(base_env.unwrapped.model.body(last_body).mass[0])
    env = NonStationary(
        base_env,
        {
            "gravity": piecewise({0: 9.81, 2: 14.0}, unit="step"),
            f"mass:{last_body}": piecewise({0: mass, 4: 2 * mass}, unit="step"),
        },
    )
    obs, _ = env.reset(seed=0)
    for _ in range(5):  # past both changes
        obs = env.step(env.action_space.sample())[0]
    model = env.unwrapped.model
    assert np.isclose(np.linalg.norm(model.opt.gravity), 14.0)
    assert model.body(last_body).mass[0] == 2 * mass
    dynamics = MujocoEnvDynamics(env, batched=True, n_threads=2)
    assert dynamics.batched
    space = env.action_space
    rng = np.random.default_rng(1)
    actions = rng.uniform(space.low, space.high, size=(6, 25, space.shape[0])) + push * space.high
    planned = dynamics(obs, actions)
    stepped = _stepped(env, actions)
    np.testing.assert_allclose(planned, stepped, rtol=0, atol=1e-12)
    if push:  # the cart reached the rail's end: the constraint force was observed
        assert np.count_nonzero(stepped[..., 8]) > 0


def test_batched_rollouts_equal_the_loop_and_one_thread():
    env = gym.make("InvertedDoublePendulum-v5")
    obs, _ = env.reset(seed=2)
    actions = np.random.default_rng(2).uniform(-1, 1, size=(5, 8, 1))
    loop = MujocoEnvDynamics(env, batched=False)
    assert not loop.batched
    expected = loop(obs, actions)
    for threads in (1, 2):
        batched = MujocoEnvDynamics(env, batched=True, n_threads=threads)
        np.testing.assert_array_equal(batched(obs, actions), expected)


def test_blind_batched_rollouts_keep_the_model_of_construction():
    env = gym.make("InvertedPendulum-v5")
    obs, _ = env.reset(seed=0)
    actions = np.random.default_rng(0).uniform(-3, 3, size=(3, 6, 1))
    blind = MujocoEnvDynamics(env, follow_changes=False, batched=True)
    following = MujocoEnvDynamics(env, batched=True)
    before = blind(obs, actions)
    env.unwrapped.model.opt.gravity[2] = -3.72
    np.testing.assert_array_equal(blind(obs, actions), before)
    assert np.abs(following(obs, actions) - before).max() > 1e-3


def test_an_unknown_observation_keeps_the_loop():
    env = gym.make("Reacher-v5")  # observes the fingertip, computed by forward kinematics
    env.reset(seed=0)
    assert not MujocoEnvDynamics(env).batched
    with pytest.raises(ValueError, match="batched=True"):
        MujocoEnvDynamics(env, batched=True)
    with pytest.raises(ValueError, match="batched"):
        MujocoEnvDynamics(env, batched="yes")
    with pytest.raises(ValueError, match="n_threads"):
        MujocoEnvDynamics(gym.make("InvertedPendulum-v5"), n_threads=0)


def test_batched_dynamics_deep_copy_and_pickle():
    """Review: the per-thread ``mujoco.rollout.Rollout`` objects (which neither copy nor
    pickle) sat on the instance, so a copy of the ground truth's dynamics failed."""
    import copy
    import pickle

    env = gym.make("InvertedPendulum-v5").unwrapped
    observation, _ = env.reset(seed=0)
    actions = np.random.default_rng(0).uniform(-1, 1, size=(6, 3, 1))
    dynamics = MujocoEnvDynamics(env, batched=True, n_threads=2)
    expected = dynamics.rollout_unchecked(observation, actions)
    for twin in (copy.deepcopy(dynamics), pickle.loads(pickle.dumps(dynamics))):
        twin_env = twin.env
        mujoco.mj_copyData(twin_env.data, twin_env.model, env.data)  # the same live state
        np.testing.assert_array_equal(twin.rollout_unchecked(observation, actions), expected)
