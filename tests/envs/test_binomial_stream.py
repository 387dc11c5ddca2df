"""Binomial stream: the hidden sinusoid, the count distribution, rewards and bad input."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from envs_testutils import MALFORMED_BOX_ACTIONS, assert_refuses_action
from hypothesis import given, settings
from hypothesis import strategies as st

from bam_rl.envs.binomial_stream import BinomialStreamEnv


def theta(t: int, amplitude: float = 0.3, offset: float = 0.5, period: float = 100.0) -> float:
    return amplitude * math.sin(2.0 * math.pi * t / period) + offset


def test_defaults_and_spaces() -> None:
    env = gym.make("bam_rl/BinomialStream-v0").unwrapped
    defaults = (env.n, env.amplitude, env.offset, env.period, env.max_steps)
    assert defaults == (15, 0.3, 0.5, 100.0, 500)
    assert env.observation_space == gym.spaces.Discrete(16)
    assert env.action_space == gym.spaces.Box(0.0, 1.0, (1,), np.float32)


def test_reset_returns_placeholder_and_theta_zero() -> None:
    env = BinomialStreamEnv()
    obs, info = env.reset(seed=0)
    assert obs == 0 and info == {"theta": 0.5, "t": 0}


def test_theta_reward_time_and_truncation() -> None:
    env = BinomialStreamEnv(max_steps=250)
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    for t in range(1, 251):
        estimate = rng.random()
        obs, reward, terminated, truncated, info = env.step(np.array([estimate], np.float32))
        assert info["t"] == t
        assert info["theta"] == pytest.approx(theta(t), abs=1e-12)
        assert reward == pytest.approx(-((float(np.float32(estimate)) - info["theta"]) ** 2))
        assert 0 <= obs <= 15
        assert terminated is False and truncated is (t == 250)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.array([0.5], np.float32))
    assert env.reset()[1]["t"] == 0


def test_perfect_estimate_scores_zero() -> None:
    env = BinomialStreamEnv()
    env.reset(seed=0)
    for t in range(1, 200):
        _, reward, _, _, _ = env.step(np.array([env.theta[t]]))
        assert reward == 0.0


def test_counts_follow_binomial_per_phase() -> None:
    """Counts average n·θ_t in the high and the low phase of the sinusoid (z-test, |z| < 4)."""
    n, steps = 15, 40_000
    env = BinomialStreamEnv(max_steps=steps)
    env.reset(seed=2024)
    counts = np.empty(steps)
    thetas = np.empty(steps)
    for i in range(steps):
        obs, _, _, _, info = env.step(np.array([0.5], np.float32))
        counts[i], thetas[i] = obs, info["theta"]
    for phase in (thetas > 0.7, thetas < 0.3, np.abs(thetas - 0.5) < 0.1):
        assert phase.sum() > 3000
        k, p = counts[phase], thetas[phase]
        z = (k - n * p).sum() / math.sqrt((n * p * (1 - p)).sum())
        assert abs(z) < 4.0, z
        # and the variance is Binomial's (ratio of squared residuals to n p (1 - p))
        ratio = ((k - n * p) ** 2).sum() / (n * p * (1 - p)).sum()
        assert abs(ratio - 1.0) < 0.1, ratio
    assert counts[thetas > 0.7].mean() > counts[thetas < 0.3].mean() + 6


def test_custom_parameters() -> None:
    env = BinomialStreamEnv(n=4, amplitude=0.0, offset=1.0, period=7.5, max_steps=10)
    env.reset(seed=0)
    for _ in range(10):
        obs, _, _, _, info = env.step(1.0)  # a Python float is accepted too
        assert obs == 4 and info["theta"] == 1.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 0}, r"n must be a positive int \(>= 1\)"),
        ({"n": -3}, r"n must be a positive int"),
        ({"n": 2.5}, r"n must be a positive int"),
        ({"amplitude": -0.1}, r"amplitude must be >= 0"),
        ({"amplitude": float("nan")}, r"amplitude must be a finite number"),
        ({"offset": 0.9}, r"offset and amplitude must keep theta in \[0, 1\]"),
        ({"offset": 0.2}, r"offset and amplitude must keep theta in \[0, 1\]"),
        ({"period": 0.0}, r"period must be > 0"),
        ({"period": "100"}, r"period must be a finite number"),
        ({"max_steps": 0}, r"max_steps must be a positive int"),
        ({"render_mode": "human"}, r"render_mode must be None or one of \[.rgb_array.\]"),
    ],
)
def test_bad_constructor_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        BinomialStreamEnv(**kwargs)


@pytest.mark.parametrize(
    "action",
    [
        np.array([1.5], np.float32),
        np.array([-0.01], np.float32),
        np.array([], np.float32),
        float("inf"),
        *MALFORMED_BOX_ACTIONS,
    ],
)
def test_bad_actions(action: object) -> None:
    assert_refuses_action(BinomialStreamEnv(), action, r"action .*\[0, 1\]")


@settings(max_examples=200, deadline=None, database=None)
@given(st.floats(allow_nan=True, allow_infinity=True, width=32))
def test_any_float_action_is_scored_or_rejected(value: float) -> None:
    env = BinomialStreamEnv(max_steps=5)
    env.reset(seed=0)
    action = np.array([value], np.float32)
    if 0.0 <= value <= 1.0:
        _, reward, _, _, info = env.step(action)
        assert reward == -((float(action[0]) - info["theta"]) ** 2) and -1.0 <= reward <= 0.0
    else:
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            env.step(action)
