"""A copy keeps its world (issue 50): ``copy.deepcopy`` and a pickle round trip (what joblib
and Ray workers do) rebuild a Gymnasium MuJoCo environment, and its ``MjModel``, from its
arguments; the copied ``NonStationary`` must act on the model the copy steps, so the context
it reports (and the harness logs as ``context_*``) is the world the copy simulates."""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # noqa: F401  (registers bam_rl/GravityCartPole-v0)
from bam_rl.schedules import cycle
from bam_rl.wrappers import NonStationary

COPIES = {
    "deepcopy": copy.deepcopy,
    "pickle": lambda env: pickle.loads(pickle.dumps(env)),
}


@pytest.mark.parametrize("how", sorted(COPIES))
def test_a_copied_pendulum_steps_in_the_world_its_context_says(how):
    env = NonStationary(gym.make("InvertedPendulum-v5"), {"gravity": cycle([3.72, 11.15])})
    env.reset(seed=0)
    copied = COPIES[how](env)
    model = copied.unwrapped.model
    assert model is not env.unwrapped.model  # a new model: the copy's own
    copied.step(np.zeros(1))
    assert copied.get_wrapper_attr("context") == {"gravity": 3.72}
    np.testing.assert_allclose(model.opt.gravity, [0.0, 0.0, -3.72])
    copied.reset()  # the next world is written into the copy's model, not the original's
    np.testing.assert_allclose(copied.unwrapped.model.opt.gravity, [0.0, 0.0, -11.15])
    np.testing.assert_allclose(env.unwrapped.model.opt.gravity, [0.0, 0.0, -3.72])


@pytest.mark.parametrize("how", sorted(COPIES))
def test_a_copy_keeps_masses_factors_and_derived_constants(how):
    changes = {"mass_scale": cycle([2.0]), "gear_scale": cycle([0.5]), "mass:pole": cycle([7.0])}
    env = NonStationary(gym.make("InvertedPendulum-v5"), changes)
    env.reset(seed=0)
    copied = COPIES[how](env)
    original, model = env.unwrapped.model, copied.unwrapped.model
    np.testing.assert_array_equal(model.body_mass, original.body_mass)
    np.testing.assert_array_equal(model.body_inertia, original.body_inertia)
    np.testing.assert_array_equal(model.actuator_gear, original.actuator_gear)
    np.testing.assert_array_equal(model.body_subtreemass, original.body_subtreemass)
    assert model.body("pole").mass[0] == 14.0


@pytest.mark.parametrize("how", sorted(COPIES))
def test_a_copy_of_the_cartpole_keeps_its_gravity(how):
    env = NonStationary(gym.make("bam_rl/GravityCartPole-v0"), {"gravity": cycle([3.72])})
    env.reset(seed=0)
    copied = COPIES[how](env)
    assert copied.unwrapped.gravity == 3.72
    assert copied.unwrapped.model.opt.gravity[2] == -3.72


def test_a_copy_before_the_first_reset_writes_nothing():
    env = NonStationary(gym.make("InvertedPendulum-v5"), {"gravity": cycle([3.72])})
    copied = copy.deepcopy(env)
    assert copied.unwrapped.model.opt.gravity[2] == -9.81  # values apply at the first reset
    copied.reset(seed=0)
    assert copied.unwrapped.model.opt.gravity[2] == -3.72
