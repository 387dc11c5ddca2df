"""The recurring suite's ``trial_steps`` no longer overrides a user's own limit silently (issue
50): ``trial_steps`` and the environment's own limit (``max_steps`` of bam-rl's cart-pole,
``max_episode_steps`` for the others) name the same thing; both given and different is a
``ValueError`` naming both, either alone is honoured."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # noqa: F401  (registers the ids)
from bam_rl.wrappers.recurring import make_recurring


def _trial_length(env, cap=400):
    env.reset(seed=0)
    for t in range(1, cap + 1):
        *_, terminated, truncated, _ = env.step(np.zeros(env.action_space.shape))
        if truncated or terminated:
            return t
    return cap


def test_trial_steps_and_a_different_max_steps_are_refused():
    with pytest.raises(ValueError, match=r"trial_steps=30 and max_steps=50 .*disagree"):
        gym.make("bam_rl/RecurringCartPoleSwingUp-v0", trial_steps=30, max_steps=50)
    with pytest.raises(ValueError, match=r"trial_steps=30 and max_episode_steps=50"):
        make_recurring("InvertedPendulum", trial_steps=30, max_episode_steps=50)


def test_either_limit_alone_or_both_equal_is_honoured():
    cartpole = "bam_rl/RecurringCartPoleSwingUp-v0"
    assert gym.make(cartpole, max_steps=7).unwrapped.max_steps == 7
    assert gym.make(cartpole, trial_steps=7).unwrapped.max_steps == 7
    assert gym.make(cartpole, trial_steps=7, max_steps=7).unwrapped.max_steps == 7
    # the suite's 300-step InvertedPendulum trials: a user's own limit replaces them
    assert _trial_length(make_recurring("InvertedPendulum", max_episode_steps=5)) <= 5
    assert make_recurring("InvertedPendulum", max_episode_steps=5).spec.max_episode_steps == 5
