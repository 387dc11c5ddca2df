"""Piecewise-stationary bandit: segments change exactly at the breakpoints; rewards; bad input."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from envs_testutils import assert_refuses_action

from bam_rl.envs.piecewise_bandit import (
    BESSON_KAUFMANN_HORIZONS,
    DEFAULT_BREAKPOINTS,
    DEFAULT_MEANS,
    PiecewiseBanditEnv,
    besson_kaufmann_problem,
)

MEANS = [[0.1, 0.9], [0.8, 0.3], [0.5, 0.6], [0.2, 0.1]]
BREAKPOINTS = [5, 4096, 4500]  # one change exactly at the internal block boundary


def infos(env: PiecewiseBanditEnv, steps: int, seed: int = 0) -> tuple[list, list]:
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    records, rewards = [], []
    for _ in range(steps):
        arm = int(rng.integers(env.n_arms))
        _, reward, _, _, info = env.step(arm)
        records.append((arm, info))
        rewards.append(reward)
    return records, rewards


def test_default_make_works() -> None:
    env = gym.make("bam_rl/PiecewiseBandit-v0").unwrapped
    np.testing.assert_array_equal(env.means, np.array(DEFAULT_MEANS))
    np.testing.assert_array_equal(env.breakpoints, DEFAULT_BREAKPOINTS)
    assert env.reward == "bernoulli" and env.max_steps == 10_000
    assert env.action_space == gym.spaces.Discrete(3)


def test_means_change_exactly_at_breakpoints() -> None:
    env = PiecewiseBanditEnv(MEANS, BREAKPOINTS, reward="gaussian", max_steps=5000)
    records, _ = infos(env, 5000)
    means = np.array([info["means"] for _, info in records])
    changes = np.flatnonzero(np.any(np.diff(means, axis=0) != 0, axis=1)) + 1
    np.testing.assert_array_equal(changes, BREAKPOINTS)
    for start, stop, row in zip([0, *BREAKPOINTS], [*BREAKPOINTS, 5000], MEANS, strict=True):
        np.testing.assert_array_equal(means[start:stop], np.broadcast_to(row, (stop - start, 2)))
        assert all(records[t][1]["t"] == t for t in (start, stop - 1))
    np.testing.assert_array_equal(env.means_table(), means)


def test_regret_and_optimal_action() -> None:
    env = PiecewiseBanditEnv(MEANS, BREAKPOINTS, max_steps=5000)
    for arm, info in infos(env, 5000, seed=3)[0]:
        best = max(info["means"])
        assert info["optimal_action"] == int(np.argmax(info["means"]))
        if arm == info["optimal_action"]:
            assert info["regret"] == 0.0
        else:
            assert info["regret"] == best - info["means"][arm] > 0.0


def test_bernoulli_rewards() -> None:
    env = PiecewiseBanditEnv([[0.3, 0.7]], [], max_steps=40_000)
    records, rewards = infos(env, 40_000, seed=1)
    rewards = np.array(rewards)
    arms = np.array([arm for arm, _ in records])
    assert set(np.unique(rewards)) == {0.0, 1.0}
    for arm, p in ((0, 0.3), (1, 0.7)):
        r = rewards[arms == arm]
        assert abs(r.mean() - p) < 4 * math.sqrt(p * (1 - p) / r.size)


def test_gaussian_rewards() -> None:
    env = PiecewiseBanditEnv([[0.3, -2.0]], [], reward="gaussian", noise_std=0.5, max_steps=40_000)
    records, rewards = infos(env, 40_000, seed=2)
    residual = np.array(rewards) - np.array([info["means"][arm] for arm, info in records])
    assert abs(residual.std() - 0.5) < 4 * 0.5 / math.sqrt(2 * residual.size)
    assert abs(residual.mean()) < 4 * 0.5 / math.sqrt(residual.size)


def test_breakpoints_beyond_horizon_are_never_reached() -> None:
    env = PiecewiseBanditEnv(MEANS, [5, 50, 500], max_steps=40)
    assert env.means_table()[-1].tolist() == MEANS[1]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"means": []}, r"means must be a 2-D \(segments, arms\) table"),
        ({"means": [0.1, 0.2]}, r"means must be a 2-D \(segments, arms\) table"),
        ({"means": [[0.1, 0.2], [0.3]]}, r"means must be a rectangular"),
        ({"means": [["a", "b"]], "breakpoints": []}, r"means must be a rectangular"),
        ({"means": [[0.1, np.nan]], "breakpoints": []}, r"means must be finite"),
        ({"means": [[0.1, 1.2]], "breakpoints": []}, r"means must lie in \[0, 1\]"),
        ({"means": MEANS, "breakpoints": [5, 10]}, r"breakpoints must have len\(means\) - 1 = 3"),
        ({"means": MEANS, "breakpoints": [5, 5, 10]}, r"breakpoints must be strictly increasing"),
        ({"means": MEANS, "breakpoints": [10, 5, 20]}, r"breakpoints must be strictly increasing"),
        ({"means": MEANS, "breakpoints": [0, 5, 10]}, r"breakpoints must be positive ints"),
        ({"means": MEANS, "breakpoints": [1.5, 5, 10]}, r"breakpoints must be positive ints"),
        ({"means": MEANS, "breakpoints": 7}, r"breakpoints must be a sequence of 3 ints"),
        ({"reward": "poisson"}, r"reward must be one of \('bernoulli', 'gaussian'\)"),
        ({"noise_std": -1.0}, r"noise_std must be >= 0"),
        ({"max_steps": -5}, r"max_steps must be a positive int"),
    ],
)
def test_bad_constructor_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        PiecewiseBanditEnv(**kwargs)


def test_gaussian_means_may_leave_unit_interval() -> None:
    PiecewiseBanditEnv([[-1.0, 3.0]], [], reward="gaussian")


@pytest.mark.parametrize("action", [3, -1, 0.0, np.nan, "0"])
def test_bad_actions(action: object) -> None:
    assert_refuses_action(
        PiecewiseBanditEnv(), action, r"action must be an integer arm index in \[0, 3\)"
    )


def test_means_table_range_checked() -> None:
    env = PiecewiseBanditEnv(max_steps=100)
    with pytest.raises(ValueError, match="max_steps=100"):
        env.means_table(0, 101)


@pytest.mark.parametrize("reward", ["bernoulli", "gaussian"])
def test_noise_stream_is_the_noise_step_draws(reward: str) -> None:
    # across the 4096-step block boundary; the episode is the same with or without the call
    env = PiecewiseBanditEnv(MEANS, BREAKPOINTS, reward=reward, max_steps=5000)
    env.reset(seed=3)
    noise = env.noise_stream()
    assert noise.shape == (5000,)
    records, rewards = infos(env, 5000, seed=3)
    plain = PiecewiseBanditEnv(MEANS, BREAKPOINTS, reward=reward, max_steps=5000)
    _, plain_rewards = infos(plain, 5000, seed=3)
    assert rewards == plain_rewards
    for t, ((arm, info), got) in enumerate(zip(records, rewards, strict=True)):
        mean = info["means"][arm]
        expected = (
            (1.0 if noise[t] < mean else 0.0) if reward == "bernoulli" else mean + 0.25 * noise[t]
        )
        assert got == expected


def test_noise_stream_only_at_the_start_of_an_episode() -> None:
    env = PiecewiseBanditEnv(MEANS, BREAKPOINTS, max_steps=100)
    env.reset(seed=0)
    env.step(0)
    with pytest.raises(RuntimeError, match="right after reset"):
        env.noise_stream()


# Horizons of the published columns, from Besson's thesis Tables 6.3/6.4 as the reproduction
# (bam_rl/experiments/piecewise.py, HORIZONS) runs them; written out here so that a
# changed constant in the environment fails this test.
PUBLISHED = {1: 5000, 2: 5000, 3: 100_000, 4: 5000, 5: 20_000}


@pytest.mark.parametrize("problem", sorted(PUBLISHED))
def test_problem_defaults_to_its_published_horizon(problem: int) -> None:
    assert BESSON_KAUFMANN_HORIZONS == PUBLISHED
    env = gym.make("bam_rl/PiecewiseBandit-v0", problem=problem).unwrapped
    assert env.max_steps == PUBLISHED[problem]
    means, breakpoints = besson_kaufmann_problem(problem)
    assert breakpoints == [int(b) for b in env.breakpoints]
    assert breakpoints == besson_kaufmann_problem(problem, PUBLISHED[problem])[1]
    assert np.array_equal(env.means, means)
    env.close()


def test_problem_1_breakpoints_at_its_published_horizon() -> None:
    env = gym.make("bam_rl/PiecewiseBandit-v0", problem=1).unwrapped
    assert env.max_steps == 5000
    assert list(env.breakpoints) == [1000, 2000, 3000, 4000]  # 0.2, 0.4, 0.6, 0.8 of T
    env.close()


def test_explicit_horizon_still_scales_the_problem() -> None:
    env = gym.make("bam_rl/PiecewiseBandit-v0", problem=1, max_steps=10_000).unwrapped
    assert env.max_steps == 10_000 and list(env.breakpoints) == [2000, 4000, 6000, 8000]
    env = gym.make("bam_rl/PiecewiseBandit-v0", problem=4, max_steps=10_000).unwrapped
    assert list(env.breakpoints) == [5000, 6250, 7500, 8750]
    with pytest.raises(ValueError, match="max_steps must be a positive int"):
        PiecewiseBanditEnv(problem=2, max_steps=0)


def test_without_problem_the_default_horizon_is_unchanged() -> None:
    env = PiecewiseBanditEnv()
    assert env.max_steps == 10_000 and list(env.breakpoints) == list(DEFAULT_BREAKPOINTS)
    assert PiecewiseBanditEnv(MEANS, BREAKPOINTS, max_steps=None).max_steps == 10_000
