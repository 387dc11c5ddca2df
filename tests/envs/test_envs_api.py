"""Gymnasium / Stable-Baselines3 API conformance of every registered environment."""

from __future__ import annotations

import importlib
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from envs_testutils import ACCEPTED_WARNINGS, ALL_IDS, CARTPOLE_IDS, rollout, strict_warnings
from gymnasium.utils.env_checker import check_env, data_equivalence

from bam_rl import envs

# Short horizons so that determinism and vector tests also cross episode boundaries.
SHORT = {
    "bam_rl/BinomialStream-v0": {"max_steps": 20},
    "bam_rl/SwitchingBandit-v0": {"max_steps": 20},
    "bam_rl/SwitchingBandit50-v0": {"max_steps": 20},
    "bam_rl/PiecewiseBandit-v0": {"max_steps": 20, "breakpoints": (5, 10, 15)},
    "bam_rl/GravityCartPole-v0": {"max_steps": 20, "gravity_schedule": (9.81, 3.72)},
    "bam_rl/GravityCartPoleEpisodic-v0": {"max_steps": 20},
    "bam_rl/GravityCartPoleContinual-v0": {"max_steps": 20},
}


def test_registered_with_string_entry_points() -> None:
    for env_id in ALL_IDS:
        spec = gym.spec(env_id)
        assert isinstance(spec.entry_point, str) and spec.entry_point.startswith("bam_rl.envs.")
        assert spec.max_episode_steps is None  # truncation is internal (`max_steps`)


def test_import_loads_neither_mujoco_nor_the_agents_or_run_layer() -> None:
    code = (
        "import sys, gymnasium as gym, bam_rl.envs\n"
        "for i in ('bam_rl/BinomialStream-v0', 'bam_rl/SwitchingBandit-v0',"
        " 'bam_rl/PiecewiseBandit-v0'):\n"
        "    gym.make(i).close()\n"
        "bad = [m for m in ('mujoco', 'bam_rl.agents', 'bam_rl.harness', 'agents', 'envs')"
        " if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_double_registration_is_guarded() -> None:
    with strict_warnings():
        importlib.reload(envs)
        envs.register_envs()
    assert all(env_id in gym.registry for env_id in ALL_IDS)


def test_import_bam_rl_registers() -> None:
    import bam_rl  # noqa: F401  (a failure here is a failure, never a skip)

    env = gym.make("bam_rl:bam_rl/SwitchingBandit-v0")
    env.close()


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_gymnasium_check_env(env_id: str) -> None:
    env = gym.make(env_id)
    # The cart-pole's render modes are exercised in test_gravity_cartpole.py: check_env would
    # open a "human" window, which a headless machine cannot.
    with strict_warnings(*ACCEPTED_WARNINGS):
        check_env(env.unwrapped, skip_render_check=env_id in CARTPOLE_IDS)
    env.close()


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_sb3_check_env(env_id: str) -> None:
    sb3_check_env = pytest.importorskip("stable_baselines3.common.env_checker").check_env
    env = gym.make(env_id)
    with strict_warnings(*ACCEPTED_WARNINGS):
        sb3_check_env(env.unwrapped)
    env.close()


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_same_seed_same_trajectory(env_id: str) -> None:
    a, b, c = (gym.make(env_id, **SHORT[env_id]) for _ in range(3))
    run_a, run_b = rollout(a, 7, 50), rollout(b, 7, 50)
    assert data_equivalence(run_a, run_b, exact=True)
    run_again = rollout(a, 7, 50)  # a seeded reset replays the same sequence on the same env
    assert data_equivalence(run_a, run_again, exact=True)
    assert not data_equivalence(run_a, rollout(c, 8, 50), exact=True)
    for env in (a, b, c):
        env.close()


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_rewards_and_flags_are_python_types(env_id: str) -> None:
    env = gym.make(env_id, **SHORT[env_id]).unwrapped
    for record in rollout(env, 0, 25):
        if record[0] == "step":
            _, obs, reward, terminated, truncated, _ = record
            assert type(reward) is float and np.isfinite(reward)
            assert type(terminated) is bool and type(truncated) is bool
            assert obs in env.observation_space
    env.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("env_id", ALL_IDS)
def test_make_vec(env_id: str, mode: str) -> None:
    vec = gym.make_vec(env_id, num_envs=4, vectorization_mode=mode, **SHORT[env_id])
    try:
        obs, infos = vec.reset(seed=3)
        assert len(obs) == 4
        vec.action_space.seed(3)
        for _ in range(25):  # crosses the 20-step truncation (autoreset)
            obs, rewards, _, _, infos = vec.step(vec.action_space.sample())
            assert rewards.shape == (4,) and np.isfinite(rewards).all()
            assert obs in vec.observation_space
        assert infos  # the hidden truth travels in the info dicts
    finally:
        vec.close()


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_spec_round_trip(env_id: str) -> None:
    env = gym.make(env_id, **SHORT[env_id])
    again = gym.make(env.spec)
    assert again.spec == env.spec
    assert data_equivalence(rollout(env, 1, 30), rollout(again, 1, 30), exact=True)
    env.close()
    again.close()


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_sb3_make_vec_env_with_its_defaults(env_id: str) -> None:
    # make_vec_env asks for render_mode="rgb_array" (falling back only on TypeError), so every
    # id must accept it; get_images returns one frame per environment.
    make_vec_env = pytest.importorskip("stable_baselines3.common.env_util").make_vec_env
    vec = make_vec_env(env_id, n_envs=2, seed=0)
    try:
        vec.reset()
        actions = np.array([vec.action_space.sample() for _ in range(2)])
        _, rewards, _, _ = vec.step(actions)
        assert rewards.shape == (2,) and np.isfinite(rewards).all()
        frames = vec.get_images()
        assert len(frames) == 2
        for frame in frames:
            assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8
            assert frame.ndim == 3 and frame.shape[2] == 3
    finally:
        vec.close()


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_gymnasium_make_vec_with_its_defaults(env_id: str) -> None:
    vec = gym.make_vec(env_id, num_envs=2)
    try:
        obs, _ = vec.reset(seed=0)
        assert len(obs) == 2
        vec.step(vec.action_space.sample())
    finally:
        vec.close()
