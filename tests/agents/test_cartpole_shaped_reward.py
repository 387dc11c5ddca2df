"""The shaped CartPole-v1 planning reward (issue 41): the environment's 1 while alive plus a
margin from the termination bounds, so sequences that all survive are no longer tied."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import GroundTruthMPPI, MPPIAgent
from bam_rl.agents.rewards import get_reward

THETA = 12 * 2 * np.pi / 360


def shaped(states):
    states = np.asarray(states, dtype=np.float64)[None]
    return get_reward("cartpole-balance-shaped").fn(states, np.zeros((*states.shape[:2], 2)))[0]


def test_alive_steps_earn_between_one_and_two_and_dead_steps_nothing():
    states = [
        [0, 0, 0, 0],
        [2.4, 0, 0, 0],
        [0, 0, THETA, 0],
        [1.2, 0, THETA / 2, 0],
        [2.5, 0, 0, 0],
    ]
    np.testing.assert_allclose(shaped(states), [2.0, 1.5, 1.5, 1.75, 0.0])


def test_reward_stops_at_the_first_unhealthy_step_and_orders_survivors_by_margin():
    # a recovery after leaving the bounds earns nothing (the environment has ended)
    np.testing.assert_allclose(shaped([[0, 0, 0, 0], [0, 0, 0.3, 0], [0, 0, 0, 0]]), [2, 0, 0])
    # flat reward ties these two survivors; the shaped one prefers the centred cart
    flat = get_reward("cartpole-balance").fn
    near_edge = np.array([[[2.0, 0, 0.1, 0]] * 3])
    centred = np.array([[[0.1, 0, 0.01, 0]] * 3])
    actions = np.zeros((1, 3, 2))
    assert flat(near_edge, actions).sum() == flat(centred, actions).sum()
    assert shaped(centred[0]).sum() > shaped(near_edge[0]).sum() > flat(near_edge, actions).sum()


def test_agents_accept_the_shaped_reward_and_save_it_by_name(tmp_path):
    env = gym.make("CartPole-v1")
    agent = MPPIAgent(
        env.observation_space,
        env.action_space,
        seed=0,
        reward="cartpole-balance-shaped",
        planning_models="mean",
        horizon=5,
        n_samples=4,
        n_features=10,
    )
    obs, info = env.reset(seed=0)
    agent.reset(obs, info)
    assert agent.act(obs) in (0, 1)
    agent.save(tmp_path / "agent")
    truth = GroundTruthMPPI(env, seed=0, reward="cartpole-balance-shaped", horizon=5, n_samples=4)
    truth.reset(obs, info)
    assert truth.act(obs) in (0, 1)
