"""Tests of bam_rl.harness.rollout and the agent registry."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import RandomAgent
from bam_rl.harness import AGENTS, INFO_FIELDS, make_agent, rollout

BANDIT = "bam_rl/SwitchingBandit-v0"
STREAM = "bam_rl/BinomialStream-v0"
LEADING = ["method", "config", "seed", "episode", "step", "episode_step"]


class GreedyAgent:
    """Tiny test agent: ε-greedy on empirical means, counts its resets, reports a summary."""

    def __init__(self, n_arms: int, seed: int = 0, epsilon: float = 0.1):
        self.n_arms = n_arms
        self.rng = np.random.default_rng(seed)
        self.epsilon = epsilon
        self.sums = np.zeros(n_arms)
        self.counts = np.zeros(n_arms)
        self.resets: list[tuple[Any, dict[str, Any]]] = []
        self.observed = 0

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        self.resets.append((observation, dict(info)))

    def act(self, observation: Any) -> int:
        if self.rng.random() < self.epsilon:
            return int(self.rng.integers(self.n_arms))
        return int(np.argmax(self.sums / np.maximum(self.counts, 1)))

    def observe(self, action, reward, next_observation, terminated, truncated, info) -> None:
        self.sums[action] += reward
        self.counts[action] += 1
        self.observed += 1

    def summary(self) -> dict[str, float]:
        return {"pulls": float(self.counts.sum()), "best": float(np.argmax(self.counts))}


class VectorEnv(gym.Env):
    """A 3-D Box action; reward −|a|²; terminates after 7 steps; info without our fields."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float64)
    action_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.k = 0
        return self.np_random.uniform(-1, 1, 2), {}

    def step(self, action):
        self.k += 1
        reward = -float(np.sum(np.square(action)))
        return self.np_random.uniform(-1, 1, 2), reward, self.k == 7, False, {"other": [1, 2]}


class BufferAgent:
    """Returns the same array object every step, mutated in place."""

    def __init__(self):
        self.buffer = np.zeros(3, dtype=np.float32)

    def reset(self, observation, info):
        pass

    def act(self, observation):
        self.buffer += 0.1
        return self.buffer

    def observe(self, *args):
        pass


def test_columns_rows_and_episode_boundaries_by_steps():
    env = gym.make(BANDIT, max_steps=50)
    agent = GreedyAgent(10)
    frame = rollout(env, agent, n_steps=120, seed=3, method="greedy", config="c")
    assert list(frame.columns[:6]) == LEADING
    assert list(frame.columns[6:]) == [
        "action",
        "reward",
        "terminated",
        "truncated",
        "regret",
        "optimal_action",
        "t",
        "belief_pulls",
        "belief_best",
    ]
    assert len(frame) == 120
    assert (frame["method"] == "greedy").all() and (frame["config"] == "c").all()
    assert (frame["seed"] == 3).all()
    np.testing.assert_array_equal(frame["step"], np.arange(120))
    np.testing.assert_array_equal(frame["episode"], np.repeat([0, 1, 2], [50, 50, 20]))
    np.testing.assert_array_equal(
        frame["episode_step"], np.concatenate([np.arange(50), np.arange(50), np.arange(20)])
    )
    assert frame.index.equals(pd.RangeIndex(120))
    assert frame["truncated"].sum() == 2
    assert frame.loc[[49, 99], "truncated"].all()
    assert not frame["terminated"].any()
    np.testing.assert_array_equal(frame["t"], frame["episode_step"])  # the env's own clock
    assert frame["action"].dtype.kind == "i"
    assert frame["reward"].dtype == np.float64
    assert frame["terminated"].dtype == bool and frame["truncated"].dtype == bool
    assert (frame["regret"] >= 0).all()
    # summary read after observe: pulls counts the steps so far (beliefs persist across resets)
    np.testing.assert_array_equal(frame["belief_pulls"], np.arange(1, 121))
    # an episode began 3 times: the first reset with the seed, two more without
    assert len(agent.resets) == 3 and agent.observed == 120


def test_episodes_budget_and_string_env_id():
    frame = rollout(
        f"{STREAM}",
        RandomAgent(gym.spaces.Box(0.0, 1.0, (1,), np.float32), seed=1),
        n_episodes=2,
        seed=0,
    )
    assert len(frame) == 2 * 500  # default max_steps
    assert frame["config"].iloc[0] == STREAM and frame["method"].iloc[0] == "RandomAgent"
    assert frame["truncated"].sum() == 2 and frame["truncated"].iloc[-1]
    assert set(frame["episode"]) == {0, 1}
    assert {"theta", "t"} <= set(frame.columns)
    assert "regret" not in frame.columns
    assert frame["action"].dtype == np.float32  # a (1,)-Box action is one number per step
    np.testing.assert_allclose(
        frame["reward"], -((frame["action"] - frame["theta"]) ** 2), rtol=1e-6
    )


def test_matches_a_hand_written_loop():
    """The env is reset with the seed once; later episodes continue its generator."""
    env = gym.make(BANDIT, max_steps=30)
    frame = rollout(env, GreedyAgent(10, seed=5), n_steps=75, seed=11)
    agent = GreedyAgent(10, seed=5)
    env = gym.make(BANDIT, max_steps=30)
    observation, info = env.reset(seed=11)
    agent.reset(observation, info)
    rewards, actions = [], []
    for _ in range(75):
        action = agent.act(observation)
        observation, reward, terminated, truncated, info = env.step(action)
        agent.observe(action, reward, observation, terminated, truncated, info)
        actions.append(action)
        rewards.append(reward)
        if terminated or truncated:
            observation, info = env.reset()
            agent.reset(observation, info)
    np.testing.assert_array_equal(frame["action"], actions)
    np.testing.assert_array_equal(frame["reward"], rewards)


def test_same_seed_gives_identical_frames():
    def run(seed):
        env = gym.make(BANDIT, max_steps=40)
        return rollout(env, make_agent("thompson", env, seed=7), n_steps=100, seed=seed)

    pd.testing.assert_frame_equal(run(1), run(1))
    assert not run(1)["reward"].equals(run(2)["reward"])


def test_vector_actions_terminations_and_copied_buffers():
    frame = rollout(VectorEnv(), BufferAgent(), n_episodes=3, seed=0)
    assert len(frame) == 21
    assert [c for c in frame.columns if c.startswith("action")] == [
        "action_0",
        "action_1",
        "action_2",
    ]
    assert frame["terminated"].sum() == 3
    np.testing.assert_array_equal(frame["episode_step"], np.tile(np.arange(7), 3))
    # each step's action was recorded before the agent mutated its buffer again
    np.testing.assert_allclose(frame["action_0"], 0.1 * np.arange(1, 22), rtol=1e-5)
    np.testing.assert_allclose(frame["reward"], -3 * frame["action_0"] ** 2, rtol=1e-5)
    assert not set(INFO_FIELDS) & set(frame.columns)
    assert "other" not in frame.columns  # only the scalar fields of INFO_FIELDS
    assert frame["config"].iloc[0] == "" and frame["seed"].iloc[0] == 0


def test_unseeded_rollout_has_a_nullable_seed_column():
    frame = rollout(VectorEnv(), BufferAgent(), n_steps=5)
    assert frame["seed"].isna().all() and str(frame["seed"].dtype) == "Int64"


def test_n_steps_ending_on_an_episode_boundary_does_not_reset_again():
    env = gym.make(BANDIT, max_steps=20)
    agent = GreedyAgent(10)
    frame = rollout(env, agent, n_steps=40, seed=0)
    assert len(agent.resets) == 2 and frame["episode"].iloc[-1] == 1


def test_tracker_beliefs_are_recorded_with_the_stream_truth():
    env = gym.make(STREAM, max_steps=60)
    frame = rollout(env, make_agent("tracker-bam", env, seed=0), n_steps=60, seed=0, method="bam")
    for column in ("theta", "t", "belief_mean", "belief_variance", "belief_n_memories"):
        assert column in frame.columns
    np.testing.assert_array_equal(frame["t"], np.arange(1, 61))
    np.testing.assert_array_equal(frame["belief_n_memories"], np.arange(1, 61))
    assert frame["belief_mean"].between(0, 1).all()


def test_cartpole_info_fields():
    env = gym.make("bam_rl/GravityCartPoleEpisodic-v0")
    frame = rollout(env, make_agent("random", env, seed=0), n_episodes=2, seed=0)
    assert {"gravity", "trial", "context_changed"} <= set(frame.columns)
    assert frame["context_changed"].dtype == bool
    assert frame.groupby("episode")["trial"].nunique().eq(1).all()
    assert frame["action"].between(-1, 1).all()


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"n_steps": 10, "n_episodes": 1},
        {"n_steps": 0},
        {"n_steps": -3},
        {"n_steps": 2.5},
        {"n_steps": True},
        {"n_episodes": "3"},
        {"n_steps": 5, "seed": "1"},
        {"n_steps": 5, "method": 3},
    ],
)
def test_bad_rollout_arguments_raise_value_error(kwargs):
    env = gym.make(BANDIT, max_steps=20)
    with pytest.raises(ValueError):
        rollout(env, GreedyAgent(10), **kwargs)


def test_make_agent_unknown_name_lists_the_accepted_ones():
    env = gym.make(BANDIT)
    with pytest.raises(ValueError, match="unknown agent 'nope'") as info:
        make_agent("nope", env, 0)
    for name in AGENTS:
        assert name in str(info.value)


def test_agents_that_do_not_fit_the_env_raise_value_error():
    with pytest.raises(ValueError, match="Discrete action space"):
        make_agent("ucb", gym.make(STREAM), 0)
    with pytest.raises(ValueError, match="unexpected keyword"):
        make_agent("random", gym.make(BANDIT), 0, lam=1.0)
    with pytest.raises(ValueError):
        RandomAgent(gym.spaces.MultiBinary(3))


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_every_registered_agent_runs(name):
    kwargs = {}
    if name.startswith("tracker"):
        env_id = STREAM
    elif name.startswith("mppi"):
        env_id = "bam_rl/GravityCartPoleEpisodic-v0"
        kwargs = {"horizon": 5, "n_samples": 4}  # a short planner: the test is the protocol
    elif "klucb" in name or name in ("dts", "exp3s"):  # rewards in [0, 1] (Bernoulli)
        env_id = "bam_rl/PiecewiseBandit-v0"
        if name.startswith(("glr", "cusum", "sw", "exp3s")):
            kwargs = {"horizon": 20, "n_breakpoints": 1}
        elif name.startswith("m-"):
            kwargs = {"horizon": 20}
        elif name.startswith("oracle"):
            kwargs = {"breakpoints": [10]}
    else:
        env_id = BANDIT
    env = gym.make(env_id, max_steps=15)
    frame = rollout(env, make_agent(name, env, seed=0, **kwargs), n_steps=20, seed=0, method=name)
    assert len(frame) == 20 and frame["episode"].iloc[-1] == 1
    assert np.isfinite(frame["reward"]).all()


def test_bandit_builders_use_bernoulli_arms_on_a_bernoulli_bandit():
    env = gym.make("bam_rl/PiecewiseBandit-v0")
    for name in ("thompson", "thompson-bam", "ucbam"):
        frame = rollout(env, make_agent(name, env, seed=0), n_steps=30, seed=0)
        assert set(frame["reward"]) <= {0.0, 1.0}


def test_progress_bar_does_not_change_the_rows(capsys):
    def run(progress):
        env = gym.make(BANDIT, max_steps=700)
        return rollout(env, GreedyAgent(10), n_steps=2500, seed=0, progress=progress)

    pd.testing.assert_frame_equal(run(True), run(False))
    env = gym.make(BANDIT, max_steps=10)
    assert len(rollout(env, GreedyAgent(10), n_episodes=3, seed=0, progress=True)) == 30


def test_random_agent_continues_identically_after_save_and_load(tmp_path):
    for space in (
        gym.spaces.Discrete(4, start=2),
        gym.spaces.Box(
            np.array([-1.0, 0.0, -np.inf]), np.array([1.0, np.inf, 5.0]), dtype=np.float64
        ),
    ):
        agent = RandomAgent(space, seed=3)
        for _ in range(5):
            agent.act(0)
        agent.save(tmp_path / "agent.npz")
        loaded = RandomAgent.load(tmp_path / "agent.npz")
        first = [agent.act(0) for _ in range(20)]
        np.testing.assert_array_equal(first, [loaded.act(0) for _ in range(20)])
        assert all(space.contains(np.asarray(a, dtype=space.dtype)) for a in first)
