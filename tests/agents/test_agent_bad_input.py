"""Invalid actions, rewards and observations raise ValueError naming the argument."""

from __future__ import annotations

import numpy as np
import pytest

from bam_rl.agents import UCB, UCBAM, BeliefTracker, ThompsonSampling
from bam_rl.beliefs import BAM, RecursiveBayes
from bam_rl.families import BetaBinomial, NormalKnownVariance

GAUSSIAN = NormalKnownVariance(mean=0.5, var=0.25, noise_var=0.0625)
BANDITS = {
    "ucb": lambda: UCB(3, seed=0),
    "thompson_fast": lambda: ThompsonSampling(3, RecursiveBayes(GAUSSIAN), seed=0),
    "thompson_bernoulli": lambda: ThompsonSampling.bernoulli(3, seed=0),
    "thompson_bam": lambda: ThompsonSampling(3, BAM(GAUSSIAN), seed=0),
    "ucbam": lambda: UCBAM(3, GAUSSIAN, seed=0),
}


@pytest.mark.parametrize("name", BANDITS)
@pytest.mark.parametrize(
    "action", [3, -1, 1.0, 1.5, "1", None, True, np.array([0, 1]), np.float64(2.0)]
)
def test_bandit_actions_outside_the_space(name, action):
    agent = BANDITS[name]()
    with pytest.raises(ValueError, match="action"):
        agent.observe(action, 0.0, 0, False, False, {})


@pytest.mark.parametrize("name", BANDITS)
@pytest.mark.parametrize("reward", [np.nan, np.inf, -np.inf, "1.0", None, [1.0, 2.0]])
def test_bandit_rewards_must_be_finite_numbers(name, reward):
    agent = BANDITS[name]()
    with pytest.raises(ValueError, match="reward"):
        agent.observe(1, reward, 0, False, False, {})
    agent.observe(np.int64(1), 1.0, 0, False, False, {})  # still usable afterwards


@pytest.mark.parametrize("name", BANDITS)
@pytest.mark.parametrize("observation", [np.nan, np.inf, "x", [np.nan]])
def test_bandit_observations_must_be_finite(name, observation):
    agent = BANDITS[name]()
    with pytest.raises(ValueError, match="observation"):
        agent.act(observation)
    with pytest.raises(ValueError, match="observation"):
        agent.observe(0, 1.0, observation, False, False, {})


def test_bernoulli_arms_need_binary_rewards():
    for agent in (
        ThompsonSampling.bernoulli(2),
        ThompsonSampling.bernoulli(2, "bam"),
        UCBAM(2, BetaBinomial()),
    ):
        with pytest.raises(ValueError, match="reward"):
            agent.observe(0, 0.5, 0, False, False, {})


def test_tracker_inputs():
    agent = BeliefTracker(RecursiveBayes(BetaBinomial()), n_trials=15)
    good = np.array([0.5], np.float32)
    with pytest.raises(ValueError, match="observation"):
        agent.act(np.nan)
    for action in (
        np.array([1.5], np.float32),
        np.array([np.nan]),
        -0.1,
        "a",
        np.array([0.1, 0.2]),
    ):
        with pytest.raises(ValueError, match="action"):
            agent.observe(action, 0.0, 3, False, False, {})
    with pytest.raises(ValueError, match="reward"):
        agent.observe(good, np.nan, 3, False, False, {})
    for count in (np.nan, 16, -1, 2.5, "3"):
        with pytest.raises(ValueError, match="next_observation"):
            agent.observe(good, 0.0, count, False, False, {})
    agent.observe(good, -0.01, np.int64(3), False, False, {})


def test_seed_validation():
    for seed in (-1, 1.5, "0", True):
        with pytest.raises(ValueError, match="seed"):
            UCB(2, seed=seed)
