"""Bandit arguments whose rewards could overflow, and refusals that name the argument given
(issue 39, defect 10, the environments' half).

Reproducers on main before: ``PiecewiseBandit(reward="gaussian", noise_std=1e308)`` and huge
means emitted ±inf rewards; ``problem=1.0`` was accepted as problem 1; ``problem=5,
max_steps=50`` was refused with "breakpoints must be positive ints (>= 1), got 0", naming a
value the user never gave.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.checks import MAX_REWARD_MAGNITUDE
from bam_rl.envs.piecewise_bandit import (
    BESSON_KAUFMANN_MIN_STEPS,
    BESSON_KAUFMANN_PROBLEMS,
    PiecewiseBanditEnv,
    besson_kaufmann_problem,
)
from bam_rl.envs.switching_bandit import SwitchingBanditEnv


@pytest.mark.parametrize("noise_std", [1e308, 1e200, MAX_REWARD_MAGNITUDE / 39])
def test_gaussian_noise_that_can_overflow_is_refused(noise_std):
    with pytest.raises(ValueError, match=r"noise_std must be in \[0, .*got"):
        PiecewiseBanditEnv(reward="gaussian", noise_std=noise_std)
    with pytest.raises(ValueError, match=r"noise_std must be in \[0, .*got"):
        SwitchingBanditEnv(noise_std=noise_std)


@pytest.mark.parametrize("mean", [1e308, -1e308, 1e151])
def test_gaussian_means_that_can_overflow_are_refused(mean):
    with pytest.raises(ValueError, match=r"means must lie within ±1e\+150"):
        PiecewiseBanditEnv(means=[[0.0, mean]], breakpoints=[], reward="gaussian")


def test_rewards_at_the_bounds_stay_finite():
    env = PiecewiseBanditEnv(
        means=[[1e149, -1e149]],
        breakpoints=[],
        reward="gaussian",
        noise_std=(MAX_REWARD_MAGNITUDE - 1e149) / 40,
        max_steps=2000,
    )
    env.reset(seed=0)
    rewards = [env.step(step % 2)[1] for step in range(2000)]
    assert all(math.isfinite(r) and math.isfinite(r * r) for r in rewards)


@pytest.mark.parametrize("problem", [1.0, 2.0, True, "1", np.float64(3.0)])
def test_problem_must_be_an_int(problem):
    with pytest.raises(ValueError, match=r"problem must be one of 1, 2, 3, 4, 5.*got"):
        PiecewiseBanditEnv(problem=problem)
    assert PiecewiseBanditEnv(problem=np.int64(2)).problem == 2


@pytest.mark.parametrize("problem", sorted(BESSON_KAUFMANN_PROBLEMS))
def test_a_too_short_horizon_names_max_steps_and_its_range(problem):
    shortest = BESSON_KAUFMANN_MIN_STEPS[problem]
    message = rf"max_steps must be an int >= {shortest} for problem={problem}.*got {shortest - 1}"
    if shortest > 1:
        with pytest.raises(ValueError, match=message):
            PiecewiseBanditEnv(problem=problem, max_steps=shortest - 1)
    for steps in range(shortest, shortest + 200):  # every horizon from the bound on works
        _, breakpoints = besson_kaufmann_problem(problem, steps)
        assert breakpoints[0] >= 1 and all(np.diff(breakpoints) > 0)
    PiecewiseBanditEnv(problem=problem, max_steps=shortest)


def test_problem_5_at_50_steps_says_max_steps():
    with pytest.raises(ValueError, match=r"max_steps must be an int >= 82 for problem=5"):
        gym.make("bam_rl/PiecewiseBandit-v0", problem=5, max_steps=50)
