"""Trial labels from the ``NonStationary`` wrapper (issue 41): without ``info["gravity"]``,
``trial_gravities`` and the segment agent's readout-pick share read the world from
``info["context"]`` (``"gravity"``, ``"g"`` or its only entry) instead of showing ``nan``.
Tiny planner: bookkeeping only."""

from __future__ import annotations

import dataclasses
import math

import gymnasium as gym
import numpy as np
import pytest

from bam_rl.agents.mppi import _trial_label
from bam_rl.harness.registry import make_agent
from bam_rl.schedules import cycle
from bam_rl.wrappers import NonStationary

SMALL = {"horizon": 3, "n_samples": 3, "n_features": 10}


@pytest.mark.parametrize(
    ("info", "label"),
    [
        ({"gravity": 9.81, "context": {"g": 3.72}}, 9.81),  # the cart-pole's own key first
        ({"context": {"gravity": 3.72, "mass:pole": 2.0}}, 3.72),
        ({"context": {"g": 10.0, "m": 1.0}}, 10.0),
        ({"context": {"mass:pole": 2.0}}, 2.0),  # the only entry
        ({"context": {"mass:pole": 2.0, "damping:hinge": 0.1}}, None),
        ({"context": {"gravity": 0.0}}, None),
        ({"context": {"gravity": True}}, None),
        ({"context": "9.81"}, None),
        ({}, None),
    ],
)
def test_trial_label(info, label):
    assert _trial_label(info) == label


def run(env, agent, trials):
    for trial in range(trials):
        obs, info = env.reset(seed=0 if trial == 0 else None)
        agent.reset(obs, info)
        for _ in range(6):
            action = agent.act(obs)
            obs, reward, terminated, truncated, info = env.step(action)
            agent.observe(action, reward, obs, terminated, truncated, info)
    obs, info = env.reset()
    agent.reset(obs, info)  # ends the last trial


def test_pendulum_trial_gravities_and_pick_share_from_context():
    env = NonStationary(
        gym.wrappers.TimeLimit(gym.make("Pendulum-v1").unwrapped, 6),
        {"g": cycle([10.0, 3.72], every=2)},
    )
    agent = make_agent(
        "mppi-bam-segments",
        env,
        seed=0,
        reward="pendulum-swingup",
        announced=True,
        readout_after_steps=None,
        **SMALL,
    )
    run(env, agent, 5)
    assert agent.trial_gravities == [10.0, 10.0, 3.72, 3.72, 10.0]
    np.testing.assert_array_equal(agent.readout_labels[:2], [10.0, 3.72])
    # the pick share compares the picked segments' worlds with the current one (g = 10 here):
    # a readout of both segments picks one of each world
    both = dataclasses.replace(agent.last_readout, weights=np.ones(2))
    assert agent._same_gravity(both) == 0.5
    assert len(agent.segment_pick_fractions) == agent.n_selections == 2


def test_unlabelled_world_keeps_nan():
    env = NonStationary(
        gym.wrappers.TimeLimit(gym.make("Pendulum-v1").unwrapped, 6),
        {"g": cycle([10.0, 3.72])},
        notify="flag",
    )
    agent = make_agent("mppi-recursive", env, seed=0, reward="pendulum-swingup", **SMALL)
    run(env, agent, 2)
    assert all(math.isnan(g) for g in agent.trial_gravities)
