"""Agents that do not fit the environment, and malformed grids, are refused with clear
messages (issue 14, items 10 and 11, the run-layer parts)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # noqa: F401
from bam_rl.agents import UCB, UCBAM, RandomAgent, ThompsonSampling
from bam_rl.families import NormalKnownVariance
from bam_rl.harness import make_agent, make_grid, rollout

BANDIT = "bam_rl/SwitchingBandit-v0"


@pytest.mark.parametrize(
    "agent",
    [
        UCB(3),
        ThompsonSampling.gaussian(3, "recursive"),
        UCBAM(12, NormalKnownVariance(mean=0.5, var=0.25, noise_var=0.0625)),
        RandomAgent(gym.spaces.Discrete(3)),
        RandomAgent(gym.spaces.Box(0.0, 1.0, (1,), np.float32)),
    ],
    ids=["ucb", "thompson", "ucbam", "random-discrete", "random-box"],
)
def test_rollout_refuses_an_agent_built_for_other_arms(agent):
    env = gym.make(BANDIT, n_arms=10)
    with pytest.raises(ValueError, match=r"Discrete\(10\)"):
        rollout(env, agent, n_steps=5, seed=0)


def test_ucb_3_in_a_10_armed_bandit_names_both():
    with pytest.raises(ValueError, match=r"UCB chooses among 3 arms.*Discrete\(10\)"):
        rollout(gym.make(BANDIT, n_arms=10), UCB(3), n_steps=5)


def test_a_bandit_agent_in_a_box_environment_is_refused():
    with pytest.raises(ValueError, match="not Discrete"):
        rollout(gym.make("bam_rl/BinomialStream-v0"), UCB(2), n_steps=5)


def test_fitting_agents_still_run():
    env = gym.make(BANDIT, n_arms=10, max_steps=20)
    assert len(rollout(env, UCB(10), n_steps=20, seed=0)) == 20
    assert len(rollout(env, RandomAgent(env.action_space), n_steps=20, seed=0)) == 20
    stream = gym.make("bam_rl/BinomialStream-v0", max_steps=20)
    assert len(rollout(stream, make_agent("tracker-bam", stream), n_steps=20, seed=0)) == 20


@pytest.mark.parametrize(
    "name",
    ["tracker-bam", "tracker-recursive", "tracker-bocd", "tracker-forgetting", "tracker-bam-reg"],
)
def test_trackers_say_they_do_not_fit_a_bandit(name):
    env = gym.make(BANDIT)
    with pytest.raises(
        ValueError,
        match=rf"agent '{name}' does not fit the environment "
        rf"'{BANDIT}'.*Binomial stream",
    ):
        make_agent(name, env)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"configs": {"c": 5}}, r"configs\['c'\] must be an environment id or a pair"),
        ({"configs": {"c": (BANDIT,)}}, r"configs\['c'\] must be"),
        ({"configs": {"c": (BANDIT, {"n_arms": 3}, "x")}}, r"configs\['c'\] must be"),
        ({"configs": {"c": (BANDIT, 5)}}, r"configs\['c'\] must be"),
        ({"configs": [BANDIT]}, r"configs must be a mapping"),
        ({"methods": {"a": "ucb"}}, r"methods\['a'\] must be a pair"),
        ({"methods": {"a": ("ucb", None)}}, r"methods\['a'\] must be a pair"),
        ({"methods": 5}, r"methods must be agent names"),
        ({"agent_kwargs": {"ucb": 3}}, r"agent_kwargs\['ucb'\] must be a dict"),
        ({"agent_kwargs": [1]}, r"agent_kwargs must be a mapping"),
    ],
)
def test_make_grid_malformed_entries(kwargs, match):
    arguments = {"methods": ["ucb"], "configs": {"c": BANDIT}, "seeds": 1, "n_steps": 5, **kwargs}
    with pytest.raises(ValueError, match=match):
        make_grid(**arguments)


def test_make_grid_accepts_lists_as_pairs():
    grid = make_grid({"u": ["ucb", {}]}, {"c": [BANDIT, {"n_arms": 3}]}, seeds=1, n_steps=5)
    assert grid[0].agent_name == "ucb" and grid[0].env_kwargs == {"n_arms": 3}
