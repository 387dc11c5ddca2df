"""A bad ``MUJOCO_GL`` stops rendering only, not the cart-pole (issue 39, defect 9).

Reproducer on main before: with ``MUJOCO_GL=garbage`` (or ``osmesa`` on a machine without
OSMesa) ``gym.make("bam_rl/GravityCartPole-v0")`` raised at ``import mujoco`` ("invalid value
for environment variable MUJOCO_GL", or PyOpenGL's ``AttributeError``), so every cart-pole run
crashed although nothing was rendered. Each case runs in a fresh interpreter: MuJoCo reads
``MUJOCO_GL`` once, when first imported.
"""

from __future__ import annotations

import ctypes.util
import os
import subprocess
import sys

import pytest

SCRIPT = """
import gymnasium as gym
import numpy as np
import bam_rl

env = gym.make("bam_rl/GravityCartPole-v0", render_mode="rgb_array")
observation, _ = env.reset(seed=0)
for _ in range(5):
    observation, reward, *_ = env.step(np.array([0.5], dtype=np.float32))
print("stepped", bool(np.isfinite(observation).all()))
try:
    env.render()
except RuntimeError as error:
    print("render refused:", error)
env.close()
"""

PLATFORMS = ["garbage", "GLX-please"]
if sys.platform.startswith("linux") and not ctypes.util.find_library("OSMesa"):
    PLATFORMS.append("osmesa")  # the library is missing here


def _run(code: str, platform: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MUJOCO_GL": platform, "OPENBLAS_NUM_THREADS": "1"}
    env.pop("PYOPENGL_PLATFORM", None)
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_bad_platform_leaves_the_simulation_and_refuses_rendering(platform):
    done = _run(SCRIPT, platform)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "stepped True"
    assert lines[1].startswith("render refused: cannot render the cart-pole")
    assert platform in lines[1]  # names what the user set
    assert os.environ.get("MUJOCO_GL") != platform  # (this process is untouched)


def test_a_cartpole_sweep_runs_with_a_bad_platform():
    code = "import sys; from bam_rl.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = ["run", "--env", "bam_rl/GravityCartPole-v0", "--agent", "random", "--steps", "5"]
    done = _run(code, "garbage", *argv, "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
