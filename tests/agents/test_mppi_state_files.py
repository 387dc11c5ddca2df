"""The MPPI agents' state files and trial ends (issue 28, items 3, 4, 5 and 8's stale gravity).

Every reproducer here failed on main before the restored-state checks: the crafted files
loaded (and ``planner.n_samples = 0`` then crashed the process in ``mujoco.rollout``), a
refused trial end left the agent refusing every later ``reset``, a trial was stored twice
after a bad ``info["gravity"]``, and ground-truth MPC planned at a stale gravity.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import bam_rl  # registers the environments
from bam_rl.agents.mppi import GroundTruthMPPI, MPPIAgent
from bam_rl.drills import fuzz as FUZZ
from bam_rl.serialization import FORMAT, read_archive, write_archive

del bam_rl


def _edit(path: Path, out: Path, edit) -> Path:
    """Writes ``path``'s archive with ``edit(document, arrays)`` applied to ``out``."""
    document, arrays = read_archive(path, FORMAT, "bam-rl state")
    edit(document["root"]["state"], arrays)
    return write_archive(out, document, arrays)


@pytest.fixture
def gt_file(tmp_path):
    path = tmp_path / "gt.npz"
    FUZZ.build("gt").save(path)
    return path


@pytest.fixture
def mppi_file(tmp_path):
    path = tmp_path / "mppi.npz"
    FUZZ.build("mppi", "bam").save(path)
    return path


def _set(*keys, value):
    def edit(state, arrays):
        node = state
        for key in keys[:-1]:
            node = node[key]["state"] if "__object__" in node[key] else node[key]
        node[keys[-1]] = value

    return edit


def _set_array(*keys, value):
    def edit(state, arrays):
        node = state
        for key in keys:
            node = node[key]["state"] if "__object__" in node[key] else node[key]
        arrays[node["__array__"]] = np.asarray(value, dtype=np.float64)

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set("planner", "n_samples", value=0), "n_samples"),
        (_set("planner", "horizon", value=10**9), "horizon"),
        (_set("planner", "temperature", value=-1.0), "temperature"),
        (_set("dynamics", "n_threads", value=10**6), "n_threads"),
        (_set("dynamics", "model_path", value="/etc/passwd"), "model_path"),
        (_set("dynamics", "model_path", value="/nonexistent.xml"), "model_path"),
        (_set("dynamics", "gravity", value={"__float__": "nan"}), "gravity"),
        (_set("dynamics", "frame_skip", value=0), "frame_skip"),
        (_set("rng", value=1.5), "rng"),
        (_set_array("planner", "sampling_var", value=[-1.0]), "sampling_var"),
        (_set_array("planner", "plan_actions", value=np.full((4, 1), 7.0)), "plan_actions"),
    ],
)
def test_a_crafted_ground_truth_file_is_refused_at_load(gt_file, tmp_path, edit, message):
    bad = _edit(gt_file, tmp_path / "bad.npz", edit)
    with pytest.raises(ValueError, match=message):
        GroundTruthMPPI.load(bad)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set("memory", value="bogus"), "memory"),
        (_set("announced", value=1), "announced"),
        (_set("planner", "n_samples", value=0), "n_samples"),
        (_set("planner", "temperature", value=-1.0), "temperature"),
        (_set("planner", "reward", "cos_index", value=99), "reward"),
        (_set("n_trials", value=7), "trial"),
        (_set("state_dim", value=4), "state_dim"),
        (_set("model", "planning_dtype", value="float16"), "planning_dtype"),
        (_set("model", "noise_var", value=2.0), "noise_var"),
        (_set_array("model", "features", "omega", value=np.zeros((8, 6))), "omega"),
        (_set("rule", "lam", value=-1.0), "lam"),
        (_set("rule", "t", value=-3), "t"),
    ],
)
def test_a_crafted_agent_file_is_refused_at_load(mppi_file, tmp_path, edit, message):
    bad = _edit(mppi_file, tmp_path / "bad.npz", edit)
    with pytest.raises(ValueError, match=message):
        MPPIAgent.load(bad)


def test_a_belief_that_is_not_the_rules_is_refused(mppi_file, tmp_path):
    def edit(state, arrays):
        key = state["model"]["state"]["belief"]["fields"]["__dict__"]["B"]["__array__"]
        arrays[key] = arrays[key] + 1.0

    with pytest.raises(ValueError, match="belief"):
        MPPIAgent.load(_edit(mppi_file, tmp_path / "bad.npz", edit))


def test_random_mutations_are_refused_or_give_a_working_agent():
    counts = FUZZ.fuzz(60, seed=1)  # crafted: the digest recomputed, the field checks at work
    assert sum(counts.values()) == 60
    assert not [key for key in counts if key.startswith("error")], counts
    assert counts["refused"] > 0 and counts["identical"] > 0


def test_a_randomly_changed_file_is_refused_or_acts_exactly_as_saved():
    """Issue 28's acceptance: a mutated saved file is refused at load or acts exactly as the
    unmutated one (the digest catches changes the field checks cannot, e.g. a temperature of
    0.6 instead of 0.5)."""
    counts = FUZZ.fuzz(40, seed=4, crafted=False)
    assert set(counts) <= {"refused", "identical"} and counts["refused"] > 30, counts


def test_an_edited_file_is_refused_by_its_digest(mppi_file, tmp_path):
    """An edit that keeps the zip valid (its CRC recomputed) but not the digest is refused."""
    import zipfile

    with zipfile.ZipFile(mppi_file) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    document = members["__json__.npy"]
    assert b'"temperature": 0.5' in document
    members["__json__.npy"] = document.replace(b'"temperature": 0.5', b'"temperature": 0.6')
    edited = tmp_path / "edited.npz"
    with zipfile.ZipFile(edited, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(ValueError, match="digest"):
        MPPIAgent.load(edited)
