"""``rgb_array`` frames of the NumPy-drawn environments, and ``"human"`` without a display."""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from envs_testutils import BANDIT_IDS, CARTPOLE_IDS
from gymnasium.error import ResetNeeded

from bam_rl.envs import ENV_IDS

DRAWN_IDS = ("bam_rl/BinomialStream-v0", *BANDIT_IDS)
FRAME_SHAPE = (240, 320, 3)
LEFT, RIGHT = 8, 312  # the bars' plotting area, in columns
MEANS_ROWS = slice(12, 172)
PULLS_ROWS = slice(184, 232)
RED = (214, 39, 40)
BLUE = (31, 119, 180)


def test_every_registered_id_declares_rgb_array() -> None:
    for env_id in ENV_IDS:
        env = gym.make(env_id, render_mode="rgb_array")
        metadata = env.unwrapped.metadata
        assert "rgb_array" in metadata["render_modes"] and metadata["render_fps"] > 0
        env.close()


@pytest.mark.parametrize("env_id", DRAWN_IDS)
def test_frame_shape_dtype_and_render_before_reset(env_id: str) -> None:
    env = gym.make(env_id, render_mode="rgb_array")
    with pytest.raises(ResetNeeded):  # gym.make's order enforcing, as for Gymnasium's own
        env.render()
    env.reset(seed=0)
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.shape == FRAME_SHAPE
    assert frame.dtype == np.uint8
    env.close()


@pytest.mark.parametrize("env_id", DRAWN_IDS)
def test_render_without_a_mode_warns_and_returns_none(env_id: str) -> None:
    env = gym.make(env_id).unwrapped
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="without specifying any render mode"):
        assert env.render() is None


def _column(n_arms: int, arm: int) -> int:
    """A pixel column in the middle of ``arm``'s bar."""
    width = RIGHT - LEFT
    return LEFT + (2 * arm + 1) * width // (2 * n_arms)


@pytest.mark.parametrize("env_id", BANDIT_IDS)
def test_bandit_frame_shows_means_pulls_and_the_last_arm(env_id: str) -> None:
    env = gym.make(env_id, render_mode="rgb_array").unwrapped
    env.reset(seed=0)
    n = env.n_arms
    before = env.render()
    assert not (before[PULLS_ROWS] == RED).all(axis=-1).any()  # nothing pulled: no red
    for arm in (1, 1, 1, 2):
        _, _, _, _, info = env.step(arm)
    frame = env.render()
    # the last pulled arm (2) is red in both panels, the others are not
    red = (frame == RED).all(axis=-1)
    assert red[MEANS_ROWS, _column(n, 2)].any() and red[PULLS_ROWS, _column(n, 2)].any()
    assert not red[:, _column(n, 1)].any() and not red[:, _column(n, 0)].any()
    # pull bars: arm 1 (3 pulls) is the full height, arm 2 (1 pull) a third, arm 0 empty
    panel = frame[PULLS_ROWS]
    drawn = (panel != panel[0, LEFT - 1]).any(axis=-1) & (panel != (236, 236, 236)).any(axis=-1)
    heights = drawn.sum(axis=0)
    rows = PULLS_ROWS.stop - PULLS_ROWS.start
    assert heights[_column(n, 1)] == rows
    assert heights[_column(n, 2)] == round(rows / 3)
    assert heights[_column(n, 0)] == 0
    # mean bars: taller for the arm with the higher mean at the step just played
    means = info["means"]
    bar = (frame[MEANS_ROWS] == BLUE).all(axis=-1).sum(axis=0)
    low, high = sorted((0, 1), key=lambda a: means[a])
    if means[high] > means[low]:
        assert bar[_column(n, high)] > bar[_column(n, low)]
    # a reset clears the pulls
    env.reset(seed=0)
    assert np.array_equal(env.render(), before)


def test_piecewise_frame_follows_the_segments() -> None:
    env = gym.make(
        "bam_rl/PiecewiseBandit-v0",
        means=[[0.9, 0.1], [0.1, 0.9]],
        breakpoints=[3],
        max_steps=6,
        render_mode="rgb_array",
    ).unwrapped
    env.reset(seed=0)
    blue = [(env.render()[MEANS_ROWS] == BLUE).all(axis=-1).sum(axis=0)]
    for _ in range(4):
        env.step(0)
    frame = env.render()  # step 3 (segment 2) was played last: arm 1 is the tall one
    red_bar = (frame[MEANS_ROWS] == RED).all(axis=-1).sum(axis=0)
    blue.append((frame[MEANS_ROWS] == BLUE).all(axis=-1).sum(axis=0))
    rows = MEANS_ROWS.stop - MEANS_ROWS.start

    def height(mean: float) -> int:  # the axis runs from 0 to the highest mean, 0.9
        return rows - round(rows * (1 - mean / 0.9))

    assert blue[0][_column(2, 0)] == height(0.9) == rows
    assert blue[0][_column(2, 1)] == height(0.1)
    assert red_bar[_column(2, 0)] == height(0.1) and blue[1][_column(2, 1)] == height(0.9)


def test_stream_frame_traces_theta_and_the_counts() -> None:
    env = gym.make("bam_rl/BinomialStream-v0", render_mode="rgb_array", max_steps=1200)
    env = env.unwrapped
    env.reset(seed=0)
    orange = (255, 127, 14)
    first = env.render()
    assert not (first == orange).all(axis=-1).any()  # no count observed yet
    counts = []
    for _ in range(1100):  # past the 1024-step block of pre-drawn counts
        obs, *_ = env.step(np.array([0.5], np.float32))
        counts.append(int(obs))
    frame = env.render()
    blue = (frame == BLUE).all(axis=-1)
    # θ is drawn across the whole window, near its value at the right edge (t = 1100)
    assert blue[:, LEFT + 2].any() and blue[:, RIGHT - 2].any()
    bottom, top = 231, 12
    rows = np.flatnonzero(blue[:, RIGHT - 1])
    theta = env.theta[1100]
    assert abs(rows.mean() - (bottom - theta * (bottom - top))) <= 3
    # the last count is an orange square at the right edge, at k / n
    marks = np.flatnonzero((frame[:, RIGHT - 1] == orange).all(axis=-1))
    expected = bottom - counts[-1] / env.n * (bottom - top)
    assert marks.size and np.min(np.abs(marks - expected)) <= 1.5
    assert frame[:4, : 320 * 1100 // 1200 - 2].std() == 0  # progress strip: played share
    assert (frame[:4, 320 * 1100 // 1200 + 2 :] == (236, 236, 236)).all()


_HEADLESS_CODE = """
import gymnasium as gym, bam_rl
from gymnasium.utils.env_checker import check_env
try:
    if {how!r} == "check_env":
        check_env(gym.make({env_id!r}).unwrapped)
    else:
        env = gym.make({env_id!r}, render_mode="human")
        env.reset(seed=0)
        env.render()
except RuntimeError as error:
    print("RuntimeError:", error)
    raise SystemExit(3)
"""


@pytest.mark.parametrize("how", ["check_env", "human"])
@pytest.mark.parametrize("env_id", CARTPOLE_IDS[:1])
def test_human_mode_without_a_display_raises_instead_of_aborting(env_id: str, how: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(MUJOCO_GL="egl", OPENBLAS_NUM_THREADS="1")
    result = subprocess.run(
        [sys.executable, "-c", _HEADLESS_CODE.format(env_id=env_id, how=how)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 3, (result.returncode, result.stderr[-2000:])  # not 134
    assert 'render_mode="human" needs a window' in result.stdout
    assert "DISPLAY" in result.stdout and 'render_mode="rgb_array"' in result.stdout
    assert "MUJOCO_GL=egl" in result.stdout
    assert "glfwGetVideoMode" not in result.stderr


def test_window_advice_names_the_headless_platform(monkeypatch: pytest.MonkeyPatch) -> None:
    from bam_rl.envs._gl import window_advice

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    assert "MUJOCO_GL=osmesa selects off-screen rendering" in (window_advice() or "")
    monkeypatch.setenv("MUJOCO_GL", "glfw")
    assert window_advice() is None
    monkeypatch.delenv("DISPLAY")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert "no display" in (window_advice() or "")
