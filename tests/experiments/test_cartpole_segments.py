"""Segment BAM's report (beyond the paper) from the cart-pole reproductions (quick runs)."""

from __future__ import annotations

import pandas as pd
import pytest

from bam_rl.harness.experiments import cartpole, cartpole_segments


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cartpole")
    cartpole.reproduce_episodic(root / "cartpole-episodic", quick=True, progress=False)
    cartpole.reproduce_continual(root / "cartpole-continual", quick=True, progress=False)
    return root


def test_reproductions_write_the_segment_report(quick_runs):
    episodic = (quick_runs / "cartpole-episodic" / "segments.txt").read_text().splitlines()
    assert episodic[0].startswith("revisit starts [")
    assert any(
        line.startswith("bam_segments     revisit trial 1: >= 0.7 x GT in") for line in episodic
    )
    assert any(line.startswith("picks on revisits, readout_same_gravity") for line in episodic)
    continual = (quick_runs / "cartpole-continual" / "segments.txt").read_text().splitlines()
    assert continual[0].startswith("continual: return to 9.81 at trial")  # the sibling's GT
    assert any(line.startswith("bam_segments") for line in continual)


def test_picks_from_steps_equal_picks_from_run_files(quick_runs):
    folder = quick_runs / "cartpole-episodic"
    steps = pd.concat(pd.read_parquet(p) for p in sorted((folder / "runs").glob("*.parquet")))
    from_steps = cartpole_segments.step_picks(steps).sort_values(["seed_index", "trial"])
    from_files = cartpole_segments.runs_picks(folder, "bam_segments")
    pd.testing.assert_frame_equal(
        from_steps.reset_index(drop=True), from_files.reset_index(drop=True), check_dtype=False
    )


def test_continual_report_says_what_it_misses(tmp_path):
    trials = pd.DataFrame(
        {
            "method": ["bam_segments"],
            "trial": [0],
            "reward": [0.1],
            "gravity": [9.81],
            "seed_index": [0],
        }
    )
    lines = cartpole_segments.write_report("continual", trials, pd.DataFrame(), tmp_path)
    assert lines is not None and "needs the episodic run's GT MPC" in lines[0]
    assert (
        cartpole_segments.write_report(
            "continual", trials.assign(method="bam"), pd.DataFrame(), tmp_path
        )
        is None
    )


def test_gt_against_a_second_gt_sample() -> None:
    """The trial-2 bar's noise floor: a second GT sample against the first, on revisits."""
    gravities = [9.81, 9.81, 3.72, 3.72, 9.81, 9.81]  # one revisit, at trial 4
    trials = pd.DataFrame(
        {
            "method": "gt",
            "seed_index": [0, 0, 0, 1, 1, 1],
            "trial": [0, 2, 4, 0, 2, 4],
            "reward": [0.4, 0.7, 0.4, 0.4, 0.7, 0.4],
            "gravity": [gravities[t] for t in (0, 2, 4, 0, 2, 4)],
        }
    )
    again = trials[["seed_index", "trial"]].assign(reward=[0.4, 0.7, 0.38, 0.4, 0.7, 0.3])
    (line,) = cartpole_segments.gt_self_lines(trials, again)
    # revisits: 0.38 / 0.4 = 0.95 is within 10 %, 0.3 / 0.4 = 0.75 is not
    assert "within 10 % on revisits in 1/2" in line and "first trial in 5/6" in line


def test_sweep_takes_keyword_variants(monkeypatch, tmp_path) -> None:
    """A dict variant's keyword arguments reach the agent beside the sweep's fixed ones."""
    import bam_rl.harness as harness

    seen = {}

    class Stop(Exception):
        pass

    def fake_make_grid(methods, *args, **kwargs):
        seen.update(methods)
        raise Stop

    monkeypatch.setattr(harness, "make_grid", fake_make_grid)
    variants = {"f400": {"readout_after_steps": (5, 10), "n_features": 400}, "k5": 5}
    with pytest.raises(Stop):
        cartpole.segment_sweep(tmp_path, 1, 1, variants)
    assert seen["f400"][0] == "mppi-bam-segments"
    assert seen["f400"][1]["n_features"] == 400 and seen["f400"][1]["announced"] is True
    assert seen["f400"][1]["readout_after_steps"] == (5, 10)
    assert seen["k5"][1]["readout_after_steps"] == 5
    # both over the paper's model, not the registered default's
    assert seen["k5"][1]["n_features"] == 200 and seen["k5"][1]["prior_precision"] == 1e-4
    assert seen["f400"][1]["prior_precision"] == 1e-4


def test_reproductions_name_segment_bams_model() -> None:
    """The reproductions' segment BAM runs with the registered model, named in its options (a
    run's file key changes with it); the paper's methods keep the paper's model."""
    from bam_rl.harness.registry import SEGMENT_MODEL

    for setting in ("episodic", "continual"):
        methods = cartpole.SETTINGS[setting]["methods"]
        assert {**methods["bam_segments"][1], **SEGMENT_MODEL} == methods["bam_segments"][1]
        for label, (_, kwargs) in methods.items():
            if label != "bam_segments":
                assert "n_features" not in kwargs and "prior_precision" not in kwargs


def test_settled_level_against_gt(monkeypatch) -> None:
    """The last trials of a first visit and trials 2+ of a revisit, each against GT MPC's
    trial of its episode."""
    gravities = [9.81] * 6 + [3.72] * 6 + [9.81] * 6  # first visits at 0 and 6, revisit at 12
    learner = (
        [0.0] * 3
        + [0.39, 0.30, 0.40]
        + [0.0] * 3
        + [0.7, 0.7, 0.5]
        + [0.1, 0.4, 0.2, 0.5, 0.39, 0.3]
    )
    rows = [
        {"method": "bam_segments", "seed_index": 0, "trial": t, "reward": r, "gravity": g}
        for t, (r, g) in enumerate(zip(learner, gravities, strict=True))
    ]
    rows += [
        {"method": "gt", "seed_index": 0, "trial": t, "reward": r, "gravity": gravities[t]}
        for t, r in ((0, 0.4), (6, 0.7), (12, 0.4))
    ]
    monkeypatch.setattr(cartpole_segments, "SETTLED_TRIALS", 3)
    (line,) = cartpole_segments.settled_lines(pd.DataFrame(rows), ["bam_segments", "bam"])
    # first visits' last 3: 0.39, 0.30, 0.40 of 0.4 -> 2 hits; 0.7, 0.7, 0.5 of 0.7 -> 2
    # revisit trials 2+: 0.4, 0.2, 0.5, 0.39, 0.3 of 0.4 -> 3 hits (0.4, 0.5, 0.39)
    assert "first visits' last trials 4/6" in line and "revisits' trials 2+ 3/5" in line
