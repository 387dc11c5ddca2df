"""Experiment 2 (§4.2) at smoke-test scale: files, figure and summary are produced and sane."""

from __future__ import annotations

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest

from bam_rl.experiments.cartpole import QUICK_SCHEDULES, SETTINGS, cartpole_grid


@pytest.mark.parametrize("setting", ["episodic", "continual"])
def test_quick_reproduction_writes_sane_files(tmp_path, setting):
    from bam_rl.cli import main

    assert (
        main(
            ["reproduce", f"cartpole-{setting}", "--quick", "--out", str(tmp_path), "--no-progress"]
        )
        == 0
    )
    folder = tmp_path / f"cartpole-{setting}"
    trials = pd.read_csv(folder / "trials.csv")
    methods = set(SETTINGS[setting]["methods"])
    n_trials = len(QUICK_SCHEDULES[setting])
    learners = methods - {"gt"}
    n_reference = 3 if "gt" in methods else 0  # the reference runs each episode's first trial
    assert set(trials["method"]) == methods
    assert len(trials) == len(learners) * n_trials + n_reference  # one seed
    assert (trials["steps"] == 200).all()
    assert trials["reward"].between(-1, 1).all()
    np.testing.assert_array_equal(
        trials.groupby("trial")["gravity"].first().to_numpy(), QUICK_SCHEDULES[setting]
    )
    steps = pd.read_csv(folder / "steps.csv")
    assert len(steps) == (len(learners) * n_trials + n_reference) * 200
    if "gt" in methods:  # placed at the episodes' first trials: 0, 2, 4
        assert sorted(trials.loc[trials["method"] == "gt", "trial"]) == [0, 2, 4]
    summary = pd.read_csv(folder / "summary.csv")
    assert set(summary["method"]) == methods
    assert summary["revisit"].any()  # 9.81 comes back in the quick schedules
    image = mpimg.imread(folder / f"cartpole_{setting}.png")
    assert image.shape[0] > 300 and image.std() > 0.01  # a drawn figure, not a blank one
    if setting == "continual":
        selections = summary.groupby("method")["selections"].first()
        # BAM selects after every trial (the first over an empty memory); BOCD never selects
        assert selections["bam"] == n_trials and selections["bocd"] == 0


def test_resumed_sweep_does_not_redo_finished_runs(tmp_path):
    from bam_rl.harness import run_many

    grid = cartpole_grid("episodic", seeds=1, quick=True)[:1]
    first = run_many(grid, backend="serial", out_dir=tmp_path, progress=False)
    files = sorted(tmp_path.iterdir())
    stamps = [path.stat().st_mtime_ns for path in files]
    again = run_many(grid, backend="serial", out_dir=tmp_path, progress=False)
    assert [path.stat().st_mtime_ns for path in sorted(tmp_path.iterdir())] == stamps
    pd.testing.assert_frame_equal(first, again)


def test_unknown_setting_is_refused():
    with pytest.raises(ValueError, match="setting"):
        cartpole_grid("weekly", seeds=1)
