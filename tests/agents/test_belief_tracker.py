"""BeliefTracker on the Binomial stream (paper §4.1)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # noqa: F401
from bam_rl.agents import BeliefTracker
from bam_rl.beliefs import BAM, BOCD, RecursiveBayes
from bam_rl.families import BetaBinomial, NormalKnownVariance


def test_action_is_the_posterior_mean_before_the_count():
    env = gym.make("bam_rl/BinomialStream-v0", n=15)
    agent = BeliefTracker(BAM(BetaBinomial(), lam=0.1))
    reference = BAM(BetaBinomial(), lam=0.1)
    observation, info = env.reset(seed=0)
    agent.reset(observation, info)
    errors = []
    for _ in range(300):
        action = agent.act(observation)
        assert action.dtype == np.float32 and action.shape == (1,)
        assert action[0] == np.float32(reference.mean)
        observation, reward, terminated, truncated, info = env.step(action)
        agent.observe(action, reward, observation, terminated, truncated, info)
        reference.update(BetaBinomial().stats(successes=int(observation), trials=15))
        assert agent.mean == pytest.approx(float(reference.mean), abs=0)
        errors.append(-reward)
    assert agent.summary()["n_memories"] == 300
    assert np.mean(errors[50:]) < 0.02  # it tracks θ_t (θ ranges over [0.2, 0.8])


def test_recursive_tracker_converges_to_the_running_mean():
    agent = BeliefTracker(RecursiveBayes(BetaBinomial(1.0, 1.0)), n_trials=10)
    for count in (3, 7, 5):
        agent.observe(np.array([0.5], np.float32), -0.1, count, False, False, {})
    assert agent.mean == pytest.approx((1 + 15) / (2 + 30))
    assert agent.variance == pytest.approx(16 * 16 / (32**2 * 33))


def test_number_of_trials_sources():
    rule = RecursiveBayes(BetaBinomial())
    assert BeliefTracker(rule).n_trials == 15
    agent = BeliefTracker(rule)
    agent.reset(0, {"n_trials": 40})
    assert agent.n_trials == 40
    fixed = BeliefTracker(rule, n_trials=7)
    fixed.reset(0, {"n_trials": 40})
    assert fixed.n_trials == 7
    env = gym.make("bam_rl/BinomialStream-v0", n=25)
    assert BeliefTracker.from_env(env, rule).n_trials == 25
    with pytest.raises(ValueError, match="n_trials"):
        BeliefTracker(rule, n_trials=0)
    with pytest.raises(ValueError, match="next_observation"):
        fixed.observe(np.array([0.5], np.float32), 0.0, 8, False, False, {})


def test_reset_follows_the_rule_episodic_semantics():
    bam = BeliefTracker(BAM(BetaBinomial()))
    bocd = BeliefTracker(BOCD(BetaBinomial(), hazard=0.01))
    for agent in (bam, bocd):
        for count in (12, 13, 14):
            agent.observe(np.array([0.5], np.float32), 0.0, count, False, False, {})
        agent.reset(0, {})
        assert agent.mean == pytest.approx(0.5)
    assert len(bam.rule.memory) == 3  # BAM keeps its memory across episodes


def test_rejects_rules_of_other_families():
    with pytest.raises(ValueError, match="BetaBinomial"):
        BeliefTracker(RecursiveBayes(NormalKnownVariance()))
    with pytest.raises(ValueError, match="rule"):
        BeliefTracker(BetaBinomial())
