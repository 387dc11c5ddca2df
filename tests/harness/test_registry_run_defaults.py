"""Agents tuned from the horizon and the breakpoints take them from the run and the
environment unless given (issue 38, item 7)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.harness.registry import _PIECEWISE, env_breakpoints, make_agent, run_horizon

TUNED = ("glr-klucb", "glr-klucb-global", "cusum-klucb", "m-klucb", "sw-klucb", "exp3s")


@pytest.fixture
def bandit():
    env = gym.make("bam_rl/PiecewiseBandit-v0", problem=1)
    yield env
    env.close()


def test_glr_klucb_takes_the_run_horizon_and_the_environment_breakpoints(bandit):
    horizon = bandit.unwrapped.max_steps
    breakpoints = [int(b) for b in bandit.unwrapped.breakpoints if b < horizon]
    assert len(breakpoints) == 4  # problem 1: at 0.2, 0.4, 0.6, 0.8 of the horizon
    agent = make_agent("glr-klucb", bandit, 0, n_steps=horizon)
    assert (agent.horizon, agent.n_breakpoints) == (horizon, 4)
    # a run of several episodes: the agent restarts every episode, so T is an episode's length
    again = make_agent("glr-klucb", bandit, 0, n_steps=3 * horizon)
    assert (again.horizon, again.n_breakpoints) == (horizon, 4)
    # a shorter run: only the breakpoints it reaches count (n_breakpoints 0 counts as 1)
    first = breakpoints[0]
    short = make_agent("cusum-klucb", bandit, 0, n_steps=first + 1)
    assert (short.horizon, short.n_breakpoints) == (first + 1, 1)
    two = make_agent("cusum-klucb", bandit, 0, n_steps=breakpoints[1] + 1)
    assert two.n_breakpoints == 2
    # without n_steps (whole episodes): the episode's length
    assert make_agent("glr-klucb", bandit, 0).horizon == horizon


def test_oracle_restart_takes_the_environment_breakpoints_and_means(bandit):
    agent = make_agent("oracle-restart-klucb", bandit, 0, n_steps=500)
    np.testing.assert_array_equal(agent.breakpoints, bandit.unwrapped.breakpoints)
    means = bandit.unwrapped.means
    np.testing.assert_array_equal(agent.changes, means[1:] != means[:-1])


def test_explicit_values_win(bandit):
    agent = make_agent("glr-klucb", bandit, 0, n_steps=500, horizon=1234, n_breakpoints=7)
    assert (agent.horizon, agent.n_breakpoints) == (1234, 7)
    # an explicit horizon alone: n_breakpoints counts the breakpoints before it
    horizon = int(bandit.unwrapped.breakpoints[2]) + 1
    assert make_agent("exp3s", bandit, 0, horizon=horizon).horizon == horizon
    assert make_agent("sw-klucb", bandit, 0, n_steps=500, tau=33).tau == 33
    oracle = make_agent("oracle-restart-klucb", bandit, 0, breakpoints=[10, 20])
    np.testing.assert_array_equal(oracle.breakpoints, [10, 20])
    assert oracle.changes.all()  # no means given with explicit breakpoints: every arm resets


@pytest.mark.parametrize("name", sorted(_PIECEWISE))
def test_every_piecewise_agent_builds_without_tuning_kwargs(name, bandit):
    agent = make_agent(name, bandit, 0, n_steps=500)
    if name == "sw-klucb":  # tau = 2 sqrt(T log T / Upsilon_T), Upsilon_T = max(1, 0)
        assert agent.tau == int(2 * math.sqrt(500 * math.log(500)))
    elif name in TUNED:
        assert agent.horizon == 500


def test_switching_bandit_breakpoints_are_the_arms_switch_times():
    env = gym.make("bam_rl/SwitchingBandit-v0")
    try:
        bandit = env.unwrapped
        points, means = env_breakpoints(env)
        expected = sorted({int(t) for times in bandit.switch_times for t in times})
        assert points == [p for p in expected if p < bandit.max_steps] and points
        table = bandit.means_table(0, bandit.max_steps)
        np.testing.assert_array_equal(means, table[[0, *points]])
        agent = make_agent("glr-klucb", env, 0, n_steps=300)
        assert agent.horizon == 300
        assert agent.n_breakpoints == max(1, sum(p < 300 for p in points))
    finally:
        env.close()


def test_run_horizon_and_bad_n_steps(bandit):
    assert run_horizon(bandit, 10) == 10
    assert run_horizon(bandit, None) == bandit.unwrapped.max_steps
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="n_steps must be None or an int >= 1"):
            make_agent("glr-klucb", bandit, 0, n_steps=bad)


def test_other_agents_keep_their_own_horizon_argument():
    """``mppi-bam``'s ``horizon`` is its planning horizon: the run's steps never set it."""
    env = gym.make("bam_rl/SwitchingBandit-v0")
    try:
        assert make_agent("ucb", env, 0, n_steps=50).n_arms == env.action_space.n
    finally:
        env.close()


@pytest.mark.parametrize(
    ("notify", "announced"), [("value", True), ("flag", True), ("none", False)]
)
def test_mppi_agents_are_announced_changes_when_a_wrapper_flags_them(notify, announced):
    from bam_rl.schedules import cycle
    from bam_rl.wrappers import NonStationary

    env = NonStationary(gym.make("Pendulum-v1"), {"g": cycle([10.0, 3.72])}, notify=notify)
    agent = make_agent("mppi-bam", env, seed=0, reward="pendulum-swingup", n_features=20)
    assert agent.announced is announced
    given = make_agent("mppi-bam", env, seed=0, reward="pendulum-swingup", announced=False)
    assert given.announced is False  # an explicit value wins
