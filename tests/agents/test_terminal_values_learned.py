"""Issue 53: a learned MPPI agent whose planning reward declares a terminal value re-solves the
cost-to-go from its posterior-mean model after each readout (the end of each trial here)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents.mppi import MPPIAgent
from bam_rl.agents.rewards import NamedReward
from bam_rl.harness.runner import rollout


def _two_trials(agent: MPPIAgent, env: gym.Env) -> None:
    rollout(env, agent, n_episodes=2, seed=0)
    agent.reset(*env.reset(seed=9))  # closes the second trial


def test_the_cost_to_go_is_solved_from_the_model_after_each_trial(monkeypatch):
    calls = []
    solve = NamedReward.solve_cost_to_go

    def recording(self, observation_step):
        calls.append(observation_step)
        return solve(self, observation_step)

    monkeypatch.setattr(NamedReward, "solve_cost_to_go", recording)
    env = gym.make("InvertedPendulum-v5", max_episode_steps=15)
    agent = MPPIAgent.from_env(
        env, memory="recursive", reward="inverted-pendulum-lqr-terminal", horizon=3, n_samples=8
    )
    reward = agent.planner.reward
    nominal = reward.terminal.nominal_cost()
    assert vars(reward).get("cost_to_go") is None  # the nominal P until the first readout
    _two_trials(agent, env)
    assert len(calls) == 2  # one readout at each trial's end
    assert all(getattr(step, "__self__", None) is agent.model for step in calls)
    solved = np.asarray(reward.cost_to_go)
    assert solved.shape == nominal.shape and np.all(np.isfinite(solved))
    assert not np.array_equal(solved, nominal)  # the model's P, not the nominal Gymnasium one


def test_a_reward_without_a_terminal_value_solves_nothing(monkeypatch):
    calls = []
    monkeypatch.setattr(NamedReward, "solve_cost_to_go", lambda self, f: calls.append(f))
    env = gym.make("InvertedPendulum-v5", max_episode_steps=15)
    agent = MPPIAgent.from_env(
        env, memory="recursive", reward="inverted-pendulum", horizon=3, n_samples=8
    )
    _two_trials(agent, env)
    assert calls == []
