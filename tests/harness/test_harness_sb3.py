"""Stable-Baselines3 algorithms through the rollout harness (issue 5)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from stable_baselines3 import PPO

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import SB3Agent
from bam_rl.harness import rollout


def test_sac_learns_online_through_the_harness(small_sac):
    env = gym.make("bam_rl/GravityCartPole-v0", max_steps=200)
    sac = small_sac(env)
    frame = rollout(env, SB3Agent(sac, seed=0), n_steps=400, seed=0, method="sac")
    assert len(frame) == 400 and frame["episode"].nunique() == 2
    assert frame["truncated"].sum() == 2  # two 200-step trials
    assert frame["action"].between(-1, 1).all()
    assert np.isfinite(frame["reward"]).all() and set(frame["gravity"]) == {9.81}
    assert sac.num_timesteps == 400 and sac._n_updates == 300  # it learned from observe


def test_ppo_policy_is_evaluated_through_the_harness():
    env = gym.make("bam_rl/GravityCartPoleEpisodic-v0", max_steps=50)
    ppo = PPO(
        "MlpPolicy", env, n_steps=64, batch_size=32, policy_kwargs={"net_arch": [32, 32]}, seed=0
    )
    before = [p.detach().clone() for p in ppo.policy.parameters()]
    frame = rollout(env, SB3Agent(ppo, seed=0), n_episodes=2, seed=1, method="ppo")
    assert len(frame) == 100 and list(frame["trial"].unique()) == [0, 1]
    after = list(ppo.policy.parameters())
    assert all(
        np.array_equal(a.detach().numpy(), b.numpy()) for a, b in zip(after, before, strict=True)
    )  # evaluation only
    again = rollout(env, SB3Agent(ppo, seed=0), n_episodes=2, seed=1, method="ppo")
    np.testing.assert_array_equal(frame["action"], again["action"])  # deterministic policy
