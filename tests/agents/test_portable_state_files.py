"""State files that travel (issue 49): a ground-truth MPPI agent stores the packaged cart-pole
model by its package name, not by the absolute path of the machine that saved it, so the file
loads after the project moves, is reinstalled or is copied to another machine; files of older
versions that hold an absolute path still load; a user's own model is stored by its path and
refused by name when it is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import bam_rl
from bam_rl.agents.simulator import (
    SimulatorDynamics,
    portable_model_path,
    resolve_model_path,
)
from bam_rl.envs.gravity_cartpole import ASSET_PATH
from bam_rl.harness import make_agent
from bam_rl.serialization import FORMAT, load_object, read_archive, write_archive

PACKAGED = "bam_rl.envs:assets/gravity_cartpole.xml"
LEGACY = Path(__file__).resolve().parents[1] / "data" / "legacy_034ed49"


def run_and_save(path: Path, steps: int = 4) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Runs a small ground-truth agent, saves it to ``path`` and returns the observations it
    sees next and the actions it takes on them (the agent kept in this process)."""
    env = gym.make("bam_rl/GravityCartPoleEpisodic-v0", max_steps=20)
    agent = make_agent("mppi-gt", env, 0, horizon=5, n_samples=8)
    observation, info = env.reset(seed=0)
    agent.reset(observation, info)
    for _ in range(steps):
        observation, *_ = env.step(agent.act(observation))
    agent.save(path)
    observations, actions = [], []
    for _ in range(steps):
        observations.append(np.array(observation))
        action = agent.act(observation)
        actions.append(np.array(action))
        observation, *_ = env.step(action)
    return observations, actions


def test_a_packaged_model_is_stored_by_its_package_name(tmp_path):
    assert portable_model_path(ASSET_PATH) == PACKAGED
    assert os.path.samefile(resolve_model_path(PACKAGED), ASSET_PATH)
    assert SimulatorDynamics(ASSET_PATH).model_path == PACKAGED
    run_and_save(tmp_path / "gt.npz")
    document, _ = read_archive(tmp_path / "gt.npz", FORMAT, "bam-rl state")
    text = json.dumps(document)
    assert PACKAGED in text
    assert str(Path(bam_rl.__file__).resolve().parent) not in text
    assert os.path.realpath(ASSET_PATH) not in text and ASSET_PATH not in text


def test_a_saved_agent_acts_identically_from_a_copy_of_the_package_elsewhere(tmp_path):
    observations, actions = run_and_save(tmp_path / "gt.npz")
    # the package copied to another folder (symlinks followed, as an install lays it out)
    elsewhere = tmp_path / "moved" / "site"
    shutil.copytree(
        Path(bam_rl.__file__).resolve().parent,
        elsewhere / "bam_rl",
        ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"),
    )
    np.savez(tmp_path / "steps.npz", observations=np.array(observations))
    code = f"""
import sys
# an editable install's finder would take bam_rl from the checkout: only the copy may serve
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__.lower()]
sys.path.insert(0, {str(elsewhere)!r})
import numpy as np
import bam_rl
from bam_rl.serialization import load_object
assert bam_rl.__file__.startswith({str(elsewhere)!r}), bam_rl.__file__
agent = load_object({str(tmp_path / "gt.npz")!r})
assert agent.dynamics.model_path == {PACKAGED!r}
actions = [agent.act(o) for o in np.load({str(tmp_path / "steps.npz")!r})["observations"]]
np.save({str(tmp_path / "actions.npy")!r}, np.array(actions))
"""
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, timeout=300)
    np.testing.assert_array_equal(np.load(tmp_path / "actions.npy"), np.array(actions))


def legacy_copy(tmp_path: Path, model_path: str) -> Path:
    """The 034ed49 ground-truth file with its model stored as ``model_path``, the way that
    version stored it (an absolute path of the machine that saved it)."""
    document, arrays = read_archive(LEGACY / "mppi-gt.npz", FORMAT, "bam-rl state")
    text = json.dumps(document)
    assert PACKAGED in text  # the committed file holds no machine's path
    path = tmp_path / "mppi-gt.npz"
    write_archive(path, json.loads(text.replace(PACKAGED, model_path)), arrays)
    return path


def test_an_old_file_with_an_absolute_path_that_is_gone_loads_the_packaged_model(tmp_path):
    gone = str(tmp_path / "old" / "bam_rl" / "envs" / "assets" / "gravity_cartpole.xml")
    old = load_object(legacy_copy(tmp_path, gone))
    new = load_object(LEGACY / "mppi-gt.npz")
    assert old.dynamics.model_path == new.dynamics.model_path == PACKAGED
    observation = np.array([0.0, 0.1, -1.0, 0.05, 0.2])
    np.testing.assert_array_equal(old.act(observation), new.act(observation))


def test_a_users_model_is_stored_by_its_path_and_refused_by_name_when_gone(tmp_path):
    own = tmp_path / "my_cartpole.xml"
    shutil.copyfile(ASSET_PATH, own)
    assert SimulatorDynamics(str(own)).model_path == str(own)
    path = legacy_copy(tmp_path, str(own))
    assert load_object(path).dynamics.model_path == str(own)
    own.unlink()
    with pytest.raises(ValueError, match=r"my_cartpole\.xml.*not on this machine"):
        load_object(path)


@pytest.mark.parametrize(
    "name", ["bam_rl.envs:../envs/assets/gravity_cartpole.xml", "bam_rl.envs:", PACKAGED + "x"]
)
def test_a_packaged_name_outside_the_package_is_refused(tmp_path, name):
    with pytest.raises(ValueError, match="model_path"):
        load_object(legacy_copy(tmp_path, name))
