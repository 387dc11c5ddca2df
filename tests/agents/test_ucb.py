"""UCB with f(t) = 1 + t log^2 t (App. D.3)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # noqa: F401
from bam_rl.agents import UCB
from bam_rl.agents.arms import ucb_confidence


def test_unpulled_arms_first_in_index_order():
    agent = UCB(4, seed=0)
    agent.reset(0, {})
    order = []
    for reward in (0.1, 0.9, 0.5, 0.3):
        arm = agent.act(0)
        order.append(arm)
        agent.observe(arm, reward, 0, False, False, {})
    assert order == [0, 1, 2, 3]
    # observing an arm out of turn removes it from the unpulled ones
    agent = UCB(3)
    agent.observe(1, 1.0, 0, False, False, {})
    assert agent.act(0) == 0


def test_index_matches_the_formula_and_ties_go_to_the_lowest_arm():
    agent = UCB(3)
    for arm, reward in [(0, 1.0), (1, 0.0), (2, 0.5), (1, 1.0), (2, 0.5)]:
        agent.observe(arm, reward, 0, False, False, {})
    t = 5
    log_f = math.log(1 + t * math.log(t) ** 2)
    assert ucb_confidence(t) == pytest.approx(log_f, rel=1e-15)
    counts, means = agent.counts, agent.means
    np.testing.assert_array_equal(counts, [1, 2, 2])
    np.testing.assert_allclose(means, [1.0, 0.5, 0.5])
    index = means + np.sqrt(2 * log_f / counts)
    assert agent.act(0) == int(np.argmax(index)) == 0
    tied = UCB(3)
    for arm in (0, 1, 2):
        tied.observe(arm, 0.5, 0, False, False, {})
    assert tied.act(0) == 0  # equal indices: lowest arm


def test_matches_literal_ucb_on_switching_bandit():
    env = gym.make("bam_rl/SwitchingBandit-v0", max_steps=2000)
    agent = UCB(10, seed=0)
    observation, info = env.reset(seed=3)
    agent.reset(observation, info)
    counts, sums = [0] * 10, [0.0] * 10
    for t in range(2000):
        if 0 in counts:
            expected = counts.index(0)
        else:
            log_f = ucb_confidence(t)
            expected = max(
                range(10),
                key=lambda i: (sums[i] / counts[i] + math.sqrt(2 * log_f / counts[i]), -i),
            )
        arm = agent.act(observation)
        assert arm == expected
        observation, reward, terminated, truncated, info = env.step(arm)
        agent.observe(arm, reward, observation, terminated, truncated, info)
        counts[arm] += 1
        sums[arm] += reward
    assert agent.t == 2000 and agent.summary() == {"t": 2000.0}


def test_reset_clears_the_statistics():
    agent = UCB(2)
    agent.observe(0, 1.0, 0, False, False, {})
    agent.reset(0, {})
    assert agent.t == 0 and not agent.counts.any()
