"""Ground truth refuses what it cannot model (issue 50): ``GroundTruthMPPI`` plans with the
unwrapped environment's equations on raw observations and actions, so it refuses wrappers
that transform them (unless given ``dynamics=f``), and it plans in the current world of every
parameter a ``NonStationary`` wrapper changes, or refuses the ones it cannot follow."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import GroundTruthMPPI
from bam_rl.agents.simulator import MujocoEnvDynamics
from bam_rl.schedules import cycle
from bam_rl.wrappers import NonStationary

SMALL = {"horizon": 3, "n_samples": 4}


def _pendulum():
    return gym.make("Pendulum-v1")


def _rescaled(env_id, low=-1.0, high=1.0):
    env = gym.make(env_id)
    return gym.wrappers.RescaleAction(env, np.float32(low), np.float32(high))


@pytest.mark.parametrize(
    ("make", "reward", "name"),
    [
        (lambda: _rescaled("InvertedPendulum-v5"), "inverted-pendulum", "RescaleAction"),
        (
            lambda: gym.wrappers.ClipAction(gym.make("InvertedPendulum-v5")),
            "inverted-pendulum",
            "ClipAction",
        ),
        (
            lambda: gym.wrappers.NormalizeObservation(_pendulum()),
            "pendulum-swingup",
            "NormalizeObservation",
        ),
        (
            lambda: gym.wrappers.TransformObservation(_pendulum(), lambda o: 2 * o, None),
            "pendulum-swingup",
            "TransformObservation",
        ),
        (
            lambda: gym.wrappers.FlattenObservation(_pendulum()),
            "pendulum-swingup",
            "FlattenObservation",
        ),
        (
            lambda: NonStationary(_pendulum(), {"g": cycle([3.72])}, observe_context=True),
            "pendulum-swingup",
            r"NonStationary\(observe_context=True\)",
        ),
        (  # the cart-pole's simulator too, under a harmless outer wrapper
            lambda: gym.wrappers.RecordEpisodeStatistics(
                _rescaled("bam_rl/GravityCartPole-v0", -2.0, 2.0)
            ),
            None,
            "RescaleAction",
        ),
    ],
)
def test_wrappers_that_transform_observations_or_actions_are_refused(make, reward, name):
    with pytest.raises(ValueError, match=rf"wrapped in {name}.*pass dynamics=f"):
        GroundTruthMPPI(make(), seed=0, reward=reward, **SMALL)


def test_dynamics_overrides_the_refusal_and_the_harmless_wrappers_are_accepted():
    rescaled = _rescaled("Pendulum-v1")
    with pytest.raises(ValueError, match="wrapped in RescaleAction"):
        GroundTruthMPPI(rescaled, seed=0, reward="pendulum-swingup", **SMALL)
    env = gym.wrappers.RecordEpisodeStatistics(
        NonStationary(gym.make("Pendulum-v1"), {"g": cycle([9.81, 3.72])})
    )
    GroundTruthMPPI(env, seed=0, reward="pendulum-swingup", **SMALL)
    agent = GroundTruthMPPI(
        rescaled, seed=0, reward="pendulum-swingup", dynamics=lambda o, a: o, **SMALL
    )
    observation, info = rescaled.reset(seed=0)
    agent.reset(observation, info)
    assert rescaled.action_space.contains(agent.act(observation))


def test_the_cartpole_plans_in_the_current_world_of_every_parameter():
    changes = {"mass_scale": cycle([1.0, 3.0]), "gear_scale": cycle([1.0, 0.5])}
    env = NonStationary(gym.make("bam_rl/GravityCartPole-v0"), changes)
    agent = GroundTruthMPPI(env, seed=0, **SMALL)
    env.reset(seed=0)
    observation, info = env.reset()  # the second world: mass × 3, gear × 0.5
    agent.reset(observation, info)
    action = np.array([0.8])
    planned = agent.dynamics(observation, np.tile(action, (2, 1, 1)))[0, 0]
    stepped = env.step(action)[0]
    np.testing.assert_allclose(planned, stepped, atol=1e-12)
    with pytest.raises(ValueError, match="more than gravity"):
        agent.save("unused")
    # gravity alone: the cart-pole's own simulator, as before (it follows info["gravity"])
    env = NonStationary(gym.make("bam_rl/GravityCartPole-v0"), {"gravity": cycle([9.81, 3.72])})
    assert type(GroundTruthMPPI(env, seed=0, **SMALL).dynamics).__name__ == "SimulatorDynamics"


def test_the_bang_bang_cartpole_refuses_changes_beyond_gravity():
    base = gym.make("bam_rl/GravityCartPole-v0", actuation="bang_bang")
    env = NonStationary(base, {"mass_scale": cycle([1.0, 2.0])})
    with pytest.raises(ValueError, match=r"changes \['mass_scale'\] on the bang_bang cart-pole"):
        GroundTruthMPPI(env, seed=0, **SMALL)
    GroundTruthMPPI(env, seed=0, follow_changes=False, **SMALL)  # blind on purpose: accepted


def test_a_classic_model_refuses_a_parameter_its_equations_do_not_read():
    env = NonStationary(gym.make("CartPole-v1"), {"attr:x_threshold": cycle([2.4, 3.0])})
    with pytest.raises(ValueError, match=r"\['attr:x_threshold'\].*cannot follow"):
        GroundTruthMPPI(env, seed=0, reward="cartpole-balance", **SMALL)
    followed = NonStationary(gym.make("CartPole-v1"), {"masscart": cycle([1.0, 2.0])})
    GroundTruthMPPI(followed, seed=0, reward="cartpole-balance", **SMALL)


def test_a_mujoco_copy_follows_an_attribute_the_wrapper_changes():
    # a declared parameter changing the environment's frame skip: env.step reads it, and so
    # must the planner's copy
    skip = (lambda e: e.frame_skip, lambda e, v: setattr(e, "frame_skip", int(v)))
    env = NonStationary(
        gym.make("InvertedPendulum-v5"), {"skip": cycle([2, 4])}, parameters={"skip": skip}
    )
    env.reset(seed=0)
    dynamics = MujocoEnvDynamics(env)
    observation, _ = env.reset()  # frame skip 4 now
    assert env.unwrapped.frame_skip == 4
    action = np.array([0.5])
    planned = dynamics(observation, np.tile(action, (2, 1, 1)))[0, 0]
    np.testing.assert_array_equal(planned, env.step(action)[0])
