"""MPPI on ``Discrete(n)`` actions (issue 41): the categorical planner, one-hot actions for the
model, ints from ``act``, state files, and ground truth on classic control."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from bam_rl.agents.mppi import CategoricalMPPI, GroundTruthMPPI, MPPIAgent

SMALL = {"n_samples": 8, "horizon": 10, "n_features": 40}


def _agent(seed: int = 0, **kwargs) -> MPPIAgent:
    env = gym.make("CartPole-v1")
    options = {**SMALL, **kwargs}
    return MPPIAgent(
        env.observation_space, env.action_space, "bam", seed, reward="cartpole-balance", **options
    )


def _run(agent, env, episodes: int, seed: int = 0) -> tuple[list[int], list[int]]:
    lengths, actions = [], []
    for episode in range(episodes):
        obs, info = env.reset(seed=seed + episode)
        agent.reset(obs, info)
        done, n = False, 0
        while not done:
            action = agent.act(obs)
            actions.append(action)
            obs, reward, terminated, truncated, info = env.step(action)
            agent.observe(action, reward, obs, terminated, truncated, info)
            done, n = terminated or truncated, n + 1
        lengths.append(n)
    return lengths, actions


def test_act_returns_an_int_of_the_space_and_the_model_sees_one_hot():
    agent = _agent()
    assert isinstance(agent.planner, CategoricalMPPI)
    assert agent.model.action_dim == 2 and agent.n_actions == 2
    env = gym.make("CartPole-v1")
    obs, info = env.reset(seed=0)
    agent.reset(obs, info)
    action = agent.act(obs)
    assert type(action) is int and env.action_space.contains(action)
    next_obs, reward, terminated, truncated, info = env.step(action)
    agent.observe(np.int64(action), reward, next_obs, terminated, truncated, info)
    np.testing.assert_array_equal(agent._trial.actions[-1], np.eye(2)[action])
    assert agent.planner.probs.shape == (SMALL["horizon"], 2)
    np.testing.assert_allclose(agent.planner.probs.sum(axis=1), 1.0)


def test_a_seed_gives_the_same_actions():
    env = gym.make("CartPole-v1")
    first = _run(_agent(3), env, 2)
    second = _run(_agent(3), env, 2)
    assert first == second


def test_save_load_continues_identically(tmp_path):
    env = gym.make("CartPole-v1")
    agent = _agent(1)
    _run(agent, env, 1)
    obs, info = env.reset(seed=9)
    agent.reset(obs, info)
    for _ in range(3):  # a pending trial is saved too
        action = agent.act(obs)
        obs, reward, terminated, truncated, info = env.step(action)
        agent.observe(action, reward, obs, terminated, truncated, info)
    path = agent.save(tmp_path / "discrete.npz")
    restored = MPPIAgent.load(path)
    assert [agent.act(obs) for _ in range(5)] == [restored.act(obs) for _ in range(5)]


@pytest.mark.parametrize("action", [2, -1, 0.0, True, "1", np.array([0, 1])])
def test_bad_actions_are_refused(action):
    agent = _agent()
    env = gym.make("CartPole-v1")
    obs, info = env.reset(seed=0)
    agent.reset(obs, info)
    with pytest.raises(ValueError, match="action must be an int of the Discrete"):
        agent.observe(action, 1.0, obs, False, False, {})


def test_bad_spaces_and_options_are_refused():
    env = gym.make("CartPole-v1")
    with pytest.raises(ValueError, match="sampling_var"):
        MPPIAgent(
            env.observation_space, env.action_space, reward="cartpole-balance", sampling_var=0.4
        )
    with pytest.raises(ValueError, match="at least 2 actions"):
        MPPIAgent(env.observation_space, gym.spaces.Discrete(1), reward="cartpole-balance")
    with pytest.raises(ValueError, match="explore must lie in"):
        MPPIAgent(env.observation_space, env.action_space, reward="cartpole-balance", explore=1.0)


def test_it_learns_to_balance():
    """Within 6 episodes (K = 16, H = 25, 100 features) the best episode is far beyond a
    random agent's ~20 steps."""
    env = gym.make("CartPole-v1")
    agent = _agent(0, n_samples=16, horizon=25, n_features=100)
    lengths, _ = _run(agent, env, 6)
    assert max(lengths) >= 80, lengths


def test_ground_truth_on_classic_control_follows_the_world():
    env = gym.make("CartPole-v1")
    agent = GroundTruthMPPI(env, seed=0, reward="cartpole-balance", n_samples=16, horizon=25)
    env.unwrapped.masspole = 1.0  # what the NonStationary wrapper writes
    env.unwrapped.total_mass = env.unwrapped.masspole + env.unwrapped.masscart
    env.unwrapped.polemass_length = env.unwrapped.masspole * env.unwrapped.length
    lengths, actions = _run(agent, env, 1)
    assert agent.dynamics.parameters["masspole"] == 1.0
    assert lengths[0] >= 150 and all(type(a) is int for a in actions)
    with pytest.raises(ValueError, match="cannot be saved"):
        agent.save("never.npz")
