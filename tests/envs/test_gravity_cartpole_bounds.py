"""Cart-pole: gravity bounded to a physical range, MuJoCo warnings raised, frame size checked
(issue 14, item 6)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.envs.gravity_cartpole import GRAVITY_RANGE, GravityCartPoleEnv

RANGE = r"must be a finite number > 0 in \[0\.1, 300\] m/s²"


@pytest.mark.parametrize("gravity", [1e6, 1e5, 301.0, 0.05, 1e-9])
def test_unphysical_gravity_is_refused_everywhere(gravity):
    with pytest.raises(ValueError, match="gravity_schedule entries " + RANGE):
        gym.make("bam_rl/GravityCartPole-v0", gravity_schedule=[gravity])
    env = GravityCartPoleEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"options\['gravity'\] " + RANGE):
        env.reset(options={"gravity": gravity})
    before = (env.gravity, env.trial, env.model.opt.gravity.copy())
    with pytest.raises(ValueError, match="gravity " + RANGE):
        env.set_gravity(gravity)
    assert (env.gravity, env.trial) == before[:2]  # a refused input changes nothing
    assert np.array_equal(env.model.opt.gravity, before[2])


def test_the_range_ends_are_accepted_and_stable():
    for gravity in GRAVITY_RANGE:
        env = GravityCartPoleEnv(gravity_schedule=[gravity], actuation="bang_bang")
        env.reset(seed=0)
        rewards = []
        for step in range(200):  # bang-bang swings: the most violent motion the env allows
            obs, reward, _, truncated, _ = env.step(
                np.array([1.0 if (step // 25) % 2 else -1.0], np.float32)
            )
            assert np.isfinite(obs).all()
            rewards.append(reward)
        assert truncated


def test_reproducer_no_longer_pays_for_an_unphysical_planet():
    # before: gravity_schedule=[1e6] was accepted, MuJoCo's instability reset stood the pole
    # upright and the mean reward was 0.586
    with pytest.raises(ValueError, match="gravity_schedule"):
        gym.make("bam_rl/GravityCartPole-v0", gravity_schedule=[1e6])


def test_mujoco_warnings_raise_and_end_the_trial(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo logs its warnings to ./MUJOCO_LOG.TXT
    env = GravityCartPoleEnv()
    env.reset(seed=0)
    env.step(np.zeros(1, np.float32))
    env.data.qvel[:] = [1e200, 1e200]  # an unstable state (what g = 1e6 produced)
    with pytest.raises(RuntimeError, match=r"mjWARN_BADQ.* at step 2 of trial 0"):
        env.step(np.zeros(1, np.float32))
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(1, np.float32))  # the trial is over
    obs, _ = env.reset()
    assert np.isfinite(obs).all() and not env.data.warning.number.any()
    assert np.isfinite(env.step(np.zeros(1, np.float32))[0]).all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"width": -5}, r"width must be an int in \[1, 8192\], got -5"),
        ({"height": 0}, r"height must be an int in \[1, 8192\], got 0"),
        ({"width": 10**6}, r"width must be an int in \[1, 8192\]"),
        ({"width": 64.0}, r"width must be an int"),
        ({"height": True}, r"height must be an int"),
        ({"height": "480"}, r"height must be an int"),
    ],
)
def test_frame_size_is_checked(kwargs, match):
    # before: width=-5 was accepted and render() aborted Python (SIGABRT)
    with pytest.raises(ValueError, match=match):
        GravityCartPoleEnv(render_mode="rgb_array", **kwargs)


def test_small_frames_render():
    env = GravityCartPoleEnv(render_mode="rgb_array", width=32, height=24)
    env.reset(seed=0)
    try:
        frame = env.render()
    except Exception as error:  # pragma: no cover - no OpenGL in this environment
        pytest.skip(f"rendering unavailable: {error}")
    assert frame.shape == (24, 32, 3)
    env.close()
