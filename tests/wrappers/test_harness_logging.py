"""The ground truth of a non-stationary world is logged by ``rollout`` and ``bam-rl run``
at every notification level, and a sweep with ``--jobs 2`` reproduces it byte for byte."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import bam_rl  # noqa: F401  (registers bam_rl/NonStationary-v0)
from bam_rl.agents.random_agent import RandomAgent
from bam_rl.cli import main
from bam_rl.harness.runner import rollout
from bam_rl.schedules import cycle, markov
from bam_rl.wrappers import NonStationary, make_nonstationary

SPEC = {
    "gravity": {"cycle": {"values": [9.81, 9.81, 3.72], "every": 10, "unit": "step"}},
    "mass_scale": {"markov": {"values": [1.0, 2.0], "p_switch": 0.5}},
}


@pytest.mark.parametrize("notify", ["value", "flag", "none"])
def test_rollout_logs_the_context_at_every_notification_level(notify):
    env = NonStationary(
        gym.make("InvertedPendulum-v5"),
        {"gravity": cycle([9.81, 9.81, 3.72], every=10, unit="step")},
        notify=notify,
    )
    agent = RandomAgent(env.action_space, seed=0)
    frame = rollout(env, agent, n_steps=60, seed=0)
    assert frame["context_gravity"].tolist() == ([9.81] * 20 + [3.72] * 10) * 2
    assert ("context_changed" in frame) == (notify != "none")
    if notify != "none":  # the flag marks exactly the steps where the value changed
        changed = frame["context_gravity"].diff().fillna(0).ne(0)
        assert frame["context_changed"].tolist() == changed.tolist()


def test_the_registered_form_builds_from_json_specs():
    env = gym.make("bam_rl/NonStationary-v0", env="InvertedPendulum-v5", changes=SPEC)
    env.reset(seed=0)
    assert env.get_wrapper_attr("context") == {"gravity": 9.81, "mass_scale": 1.0}
    built = make_nonstationary("InvertedPendulum-v5", {"mass_scale": markov([1.0, 2.0], 0.5)})
    assert built.changes["mass_scale"] == markov([1.0, 2.0], 0.5)
    with pytest.raises(ValueError, match=r"changes\['gravity'\] must name one of"):
        make_nonstationary("InvertedPendulum-v5", {"gravity": {"wobble": {}}})
    misspelt = {"gravity": {"cycle": {"values": [9.81, 3.72], "evry": 2}}}
    with pytest.raises(
        ValueError, match=r"cycle takes values, every, unit, got unknown \['evry'\]"
    ):
        make_nonstationary("InvertedPendulum-v5", misspelt)
    with pytest.raises(ValueError, match="needs env and changes"):
        gym.make("bam_rl/NonStationary-v0")
    with pytest.raises(ValueError, match="needs changes"):
        make_nonstationary("InvertedPendulum-v5")
    with pytest.raises(ValueError, match="env='Nope-v1' is not a registered Gymnasium"):
        make_nonstationary("Nope-v1", SPEC)


def _run(tmp_path, name, notify, jobs):
    out = tmp_path / name
    kwargs = {"env": "InvertedPendulum-v5", "changes": SPEC, "notify": notify}
    code = main(
        [
            "run", "--agent", "random", "--env", "bam_rl/NonStationary-v0",
            "--env-kwargs", json.dumps(kwargs), "--steps", "80", "--seeds", "2",
            "--jobs", str(jobs), "--out", str(out), "--no-progress",
        ]
    )  # fmt: skip
    assert code == 0
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.suffix in (".csv", ".parquet"))
    assert len(files) == 2
    return files


def _read(path):
    return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)


@pytest.mark.parametrize("notify", ["value", "none"])
def test_bam_rl_run_logs_the_ground_truth_and_jobs_2_gives_the_same_bytes(tmp_path, notify):
    one = _run(tmp_path, "one", notify, jobs=1)
    two = _run(tmp_path, "two", notify, jobs=2)
    for a, b in zip(one, two, strict=True):
        frame = _read(a)
        assert {"context_gravity", "context_mass_scale"} <= set(frame.columns)
        assert set(frame["context_gravity"]) == {9.81, 3.72}
        pd.testing.assert_frame_equal(frame, _read(b))
        assert a.read_bytes() == b.read_bytes()
    seeds = [_read(p)["context_mass_scale"].to_numpy() for p in one]
    assert not np.array_equal(seeds[0], seeds[1])  # each seed its own schedule
