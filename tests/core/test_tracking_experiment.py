"""Experiment 1 at small scale: the qualitative claims of paper §4.1 as behaviour."""

from __future__ import annotations

import numpy as np
import pytest

from bam_rl.experiments.tracking import (
    estimate_lag,
    run_tracking,
    summarize,
    tracking_experiment,
)


def test_estimate_lag_recovers_a_known_shift():
    t = np.arange(400)
    truth = np.sin(2 * np.pi * t / 100)
    for shift in (0, 3, 7):
        delayed = np.sin(2 * np.pi * (t - shift) / 100)
        assert estimate_lag(delayed, truth) == pytest.approx(shift, abs=0.05)
    assert estimate_lag(np.sin(2 * np.pi * (t - 2.5) / 100), truth) == pytest.approx(2.5, abs=0.1)


def test_bam_tracks_without_lag_and_recursive_bayes_converges_to_the_average():
    frame = tracking_experiment(
        methods=("recursive", "bocd", "forgetting", "bam"), seeds=2, n_steps=300, progress=False
    )
    summary = summarize(frame).set_index("method")
    assert summary.loc["recursive", "mse"] > 2.5 * summary.loc["bam", "mse"]
    assert abs(summary.loc["bam", "lag"]) < 1.0
    assert summary.loc["bocd", "lag"] > 2.0 and summary.loc["forgetting", "lag"] > 2.0
    assert summary.loc["bam", "remembered"] > 10
    late = frame[(frame["method"] == "recursive") & (frame["t"] > 200)]
    assert abs(late["mean"].mean() - 0.5) < 0.05  # the long-run average of θ_t


def test_same_seed_same_stream_for_every_method():
    a, b = run_tracking("recursive", seed=3, n_steps=50), run_tracking("bam", seed=3, n_steps=50)
    np.testing.assert_array_equal(a["count"], b["count"])
    np.testing.assert_array_equal(a["theta"], b["theta"])
    with pytest.raises(ValueError, match="method"):
        run_tracking("kalman", seed=0)


def test_reproduce_tracking_through_the_cli(tmp_path, capsys):
    import pandas as pd

    from bam_rl.cli import main

    assert (
        main(
            [
                "reproduce",
                "tracking",
                "--quick",
                "--seeds",
                "2",
                "--out",
                str(tmp_path),
                "--no-progress",
            ]
        )
        == 0
    )
    folder = tmp_path / "tracking"
    summary = pd.read_csv(folder / "tracking_summary.csv")
    assert set(summary["method"]) == {"recursive", "bocd", "forgetting", "bam", "bam_reg"}
    assert len(pd.read_csv(folder / "tracking.csv")) == 5 * 2 * 300
    assert (folder / "tracking.png").stat().st_size > 10_000
    assert "tracking" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["reproduce", "weather"])
