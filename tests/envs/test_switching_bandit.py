"""Switching-arm bandit: configuration, switch statistics, noise, regret and bad input."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from envs_testutils import assert_refuses_action
from hypothesis import given, settings
from hypothesis import strategies as st

from bam_rl.envs.switching_bandit import SwitchingBanditEnv


def play(env: SwitchingBanditEnv, seed: int, steps: int) -> dict[str, np.ndarray]:
    """Pull uniformly random arms; collect arms, rewards and infos."""
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    arms = rng.integers(env.n_arms, size=steps)
    out = {k: [] for k in ("reward", "means", "optimal", "regret", "t")}
    for arm in arms:
        _, reward, _, _, info = env.step(int(arm))
        out["reward"].append(reward)
        out["means"].append(info["means"])
        out["optimal"].append(info["optimal_action"])
        out["regret"].append(info["regret"])
        out["t"].append(info["t"])
    return {"arm": arms, **{k: np.array(v) for k, v in out.items()}}


def test_registered_defaults() -> None:
    env = gym.make("bam_rl/SwitchingBandit-v0").unwrapped
    assert (env.n_arms, env.switch_prob, env.noise_std, env.max_steps) == (10, 0.016, 0.25, 10_000)
    assert env.action_space == gym.spaces.Discrete(10)
    assert env.observation_space == gym.spaces.Discrete(1)
    assert gym.make("bam_rl/SwitchingBandit50-v0").unwrapped.n_arms == 50
    assert gym.make("bam_rl/SwitchingBandit-v0", n_arms=3).unwrapped.n_arms == 3


def test_each_arm_alternates_between_its_two_values() -> None:
    env = SwitchingBanditEnv(n_arms=6, config_seed=4, max_steps=20_000)
    table = env.means_table()
    for k in range(6):
        assert set(np.unique(table[:, k])) <= {env.low_values[k], env.high_values[k]}
        assert env.low_values[k] <= env.high_values[k]
        changes = np.flatnonzero(np.diff(table[:, k])) + 1
        np.testing.assert_array_equal(changes, env.switch_times[k])
    assert table.shape == (20_000, 6)
    # asynchronous: arms do not switch together
    assert len(set(env.switch_times[0].tolist()) & set(env.switch_times[1].tolist())) < 10


def test_switch_rate_per_arm() -> None:
    p, steps = 0.016, 200_000
    env = SwitchingBanditEnv(n_arms=10, switch_prob=p, config_seed=11, max_steps=steps)
    table = env.means_table()
    rates = (np.diff(table, axis=0) != 0).mean(axis=0)
    tolerance = 4.0 * math.sqrt(p * (1 - p) / (steps - 1))
    np.testing.assert_allclose(rates, p, atol=tolerance)


def test_config_seed_fixes_configuration_reset_seed_fixes_noise() -> None:
    a = SwitchingBanditEnv(config_seed=5, max_steps=3000)
    b = SwitchingBanditEnv(config_seed=5, max_steps=3000)
    c = SwitchingBanditEnv(config_seed=6, max_steps=3000)
    np.testing.assert_array_equal(a.means_table(), b.means_table())
    assert not np.array_equal(a.means_table(), c.means_table())
    run_1, run_2, run_3 = play(a, 0, 3000), play(b, 0, 3000), play(a, 1, 3000)
    np.testing.assert_array_equal(run_1["reward"], run_2["reward"])
    np.testing.assert_array_equal(run_1["means"], run_3["means"])  # same config
    assert not np.array_equal(run_1["reward"], run_3["reward"])  # other noise


def test_step_infos_follow_the_table_across_blocks() -> None:
    env = SwitchingBanditEnv(n_arms=5, config_seed=2, max_steps=9000)
    run = play(env, 3, 9000)  # crosses the internal 4096-step blocks
    table = env.means_table()
    np.testing.assert_array_equal(run["means"], table)
    np.testing.assert_array_equal(run["t"], np.arange(9000))
    np.testing.assert_array_equal(run["optimal"], table.argmax(axis=1))
    np.testing.assert_array_equal(env.means_table(4000, 4200), table[4000:4200])


def test_reward_noise_is_gaussian_with_sigma() -> None:
    env = SwitchingBanditEnv(n_arms=10, config_seed=0, max_steps=60_000)
    run = play(env, 9, 60_000)
    residual = run["reward"] - run["means"][np.arange(60_000), run["arm"]]
    n = residual.size
    assert abs(residual.mean()) < 4 * 0.25 / math.sqrt(n)
    assert abs(residual.std() - 0.25) < 4 * 0.25 / math.sqrt(2 * n)
    # normal tails: about 4.55 % beyond 2σ
    assert abs((np.abs(residual) > 0.5).mean() - 0.0455) < 0.006


def test_regret_is_zero_exactly_for_the_optimal_arm() -> None:
    env = SwitchingBanditEnv(n_arms=4, config_seed=1, max_steps=5000)
    run = play(env, 0, 5000)
    pulled = run["means"][np.arange(5000), run["arm"]]
    best = run["means"].max(axis=1)
    np.testing.assert_array_equal(run["regret"], best - pulled)
    optimal = run["arm"] == run["optimal"]
    assert optimal.any() and (~optimal).any()
    assert np.all(run["regret"][optimal] == 0.0)
    tied = pulled == best
    assert np.all(run["regret"][~tied] > 0.0)
    assert all(type(r) is float for r in run["regret"][:10].tolist())


def test_reset_info_and_truncation() -> None:
    env = SwitchingBanditEnv(n_arms=3, max_steps=5)
    obs, info = env.reset(seed=0)
    assert obs == 0 and info["t"] == 0 and info["means"].shape == (3,)
    assert info["optimal_action"] == int(np.argmax(info["means"]))
    for t in range(5):
        obs, _, terminated, truncated, _ = env.step(0)
        assert obs == 0 and terminated is False and truncated is (t == 4)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_info_means_cannot_corrupt_the_environment() -> None:
    env = SwitchingBanditEnv(n_arms=3, max_steps=10)
    _, info = env.reset(seed=0)
    info["means"][:] = 99.0
    _, _, _, _, info = env.step(0)
    assert info["means"].max() < 99.0


def test_noise_free_and_constant_limits() -> None:
    env = SwitchingBanditEnv(n_arms=2, switch_prob=0.0, noise_std=0.0, max_steps=100)
    run = play(env, 0, 100)
    assert np.all(run["means"] == run["means"][0])
    np.testing.assert_array_equal(run["reward"], run["means"][np.arange(100), run["arm"]])
    always = SwitchingBanditEnv(n_arms=2, switch_prob=1.0, max_steps=100).means_table()
    assert np.all(np.diff(always, axis=0) != 0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_arms": 0}, r"n_arms must be a positive int \(>= 1\)"),
        ({"n_arms": 2.0}, r"n_arms must be a positive int"),
        ({"switch_prob": -0.1}, r"switch_prob must be a probability in \[0, 1\]"),
        ({"switch_prob": 1.5}, r"switch_prob must be a probability in \[0, 1\]"),
        ({"switch_prob": float("nan")}, r"switch_prob must be a finite number"),
        ({"noise_std": -0.25}, r"noise_std must be >= 0"),
        ({"config_seed": -1}, r"config_seed must be a non-negative int or None"),
        ({"config_seed": 1.5}, r"config_seed must be a non-negative int or None"),
        ({"max_steps": 0}, r"max_steps must be a positive int"),
        ({"value_range": (1.0, 0.0)}, r"value_range must satisfy low <= high"),
        ({"value_range": (0.0,)}, r"value_range must be two finite floats"),
        ({"value_range": (0.0, np.inf)}, r"value_range must be two finite floats"),
        ({"render_mode": "human"}, r"render_mode must be None"),
    ],
)
def test_bad_constructor_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SwitchingBanditEnv(**kwargs)


@pytest.mark.parametrize(
    "action", [-1, 10, 3.0, np.float64(1.0), float("nan"), "1", None, np.array([1, 2]), True]
)
def test_bad_actions(action: object) -> None:
    assert_refuses_action(
        SwitchingBanditEnv(), action, r"action must be an integer arm index in \[0, 10\)"
    )


def test_integer_like_actions_are_accepted() -> None:
    env = SwitchingBanditEnv(max_steps=10)
    env.reset(seed=0)
    for action in (1, np.int64(2), np.int32(3), np.array(4), np.array([5])):
        env.step(action)


def test_random_config_seed_is_recorded() -> None:
    env = SwitchingBanditEnv(config_seed=None, max_steps=100)
    same = SwitchingBanditEnv(config_seed=env.config_seed, max_steps=100)
    np.testing.assert_array_equal(env.means_table(), same.means_table())


@settings(max_examples=200, deadline=None, database=None)
@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_any_integer_action_is_pulled_or_rejected(arm: int) -> None:
    env = SwitchingBanditEnv(n_arms=7, max_steps=5)
    env.reset(seed=0)
    if 0 <= arm < 7:
        _, _, _, _, info = env.step(np.int64(arm))
        assert info["regret"] == info["means"].max() - info["means"][arm]
    else:
        with pytest.raises(ValueError, match=r"\[0, 7\)"):
            env.step(arm)


def test_separated_high_and_low_values():
    env = SwitchingBanditEnv(n_arms=6, low_range=(0.0, 0.3), high_range=(0.7, 1.0))
    assert np.all((env.low_values >= 0.0) & (env.low_values <= 0.3))
    assert np.all((env.high_values >= 0.7) & (env.high_values <= 1.0))
    default = SwitchingBanditEnv(n_arms=6)
    assert default.low_range is None and np.all(default.low_values <= default.high_values)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"low_range": (0.0, 0.3)}, r"low_range and high_range must be given together"),
        ({"low_range": (0.0, 0.6), "high_range": (0.5, 1.0)}, r"high_range must start"),
        ({"low_range": (0.3, 0.0), "high_range": (0.5, 1.0)}, r"low_range must satisfy"),
        ({"low_range": (0.0, np.nan), "high_range": (0.5, 1.0)}, r"low_range must be two"),
    ],
)
def test_bad_separated_ranges(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SwitchingBanditEnv(**kwargs)
