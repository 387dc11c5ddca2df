"""Experiment 3 at toy scale: structure, regret bookkeeping and resumption."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bam_rl.experiments.bandits import (
    METHODS,
    SETTINGS,
    bandit_configs,
    bandit_experiment,
    reproduce,
    summarize,
)


def test_cumulative_regret_per_run(tmp_path):
    frame = bandit_experiment(
        arms=(10,), configurations=1, seeds=2, n_steps=300, out_dir=tmp_path, progress=False
    )
    assert set(frame["method"]) == set(METHODS)
    assert len(frame) == len(METHODS) * 2 * 300
    for _, run in frame.groupby(["method", "config", "seed"]):
        regret = run["cumulative_regret"].to_numpy()
        assert np.all(np.diff(regret) >= 0) and regret[0] >= 0
    summary = summarize(frame)
    assert (summary["runs"] == 2).all()
    assert (summary["q25"] <= summary["median"]).all()
    assert (summary["median"] <= summary["q75"]).all()
    # a rerun reads the finished runs back instead of recomputing them
    files = sorted(p.stat().st_mtime_ns for p in tmp_path.iterdir())
    again = bandit_experiment(
        arms=(10,), configurations=1, seeds=2, n_steps=300, out_dir=tmp_path, progress=False
    )
    pd.testing.assert_frame_equal(frame, again)
    assert sorted(p.stat().st_mtime_ns for p in tmp_path.iterdir()) == files


def test_reproduce_writes_figure_and_summary(tmp_path):
    summary = reproduce(tmp_path, seeds=1, quick=True, progress=False)
    assert set(summary["method"]) == set(METHODS) and set(summary["setting"]) == set(SETTINGS)
    for setting in SETTINGS:
        assert (tmp_path / setting / "bandits.png").stat().st_size > 10_000
    assert len(pd.read_csv(tmp_path / "bandits_summary.csv")) == len(METHODS) * len(SETTINGS)


def test_settings_reach_every_environment():
    import gymnasium as gym

    configs = bandit_configs(
        arms=(10, 50), configurations=2, n_steps=100, env_kwargs=SETTINGS["separated"]
    )
    assert len(configs) == 4
    for env_id, kwargs in configs.values():
        env = gym.make(env_id, **kwargs).unwrapped
        assert env.low_values.max() <= 0.4 and env.high_values.min() >= 0.6
