"""Segment BAM's report (beyond the paper) from the cart-pole reproductions (quick runs)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bam_rl.experiments import cartpole, cartpole_segments


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
    # ... and planner, named so that a run file's key says which agent it holds
    assert seen["k5"][1]["feature_states"] is None
    assert seen["k5"][1]["planning_models"] == "draws"


def test_reproductions_name_segment_bams_registered_model_and_planner() -> None:
    """The reproductions' segment BAM runs with the registered defaults, named in its options
    (a run file's key is a digest of them), and the paper's methods with neither."""
    from bam_rl.harness.registry import SEGMENT_MODEL_OPTIONS

    assert SEGMENT_MODEL_OPTIONS == {"feature_states": (1, 2, 3, 4), "planning_models": "mean"}
    for setting in ("episodic", "continual"):
        for method, (_, kwargs) in cartpole.SETTINGS[setting]["methods"].items():
            named = {k: kwargs[k] for k in SEGMENT_MODEL_OPTIONS if k in kwargs}
            assert named == (SEGMENT_MODEL_OPTIONS if method == "bam_segments" else {}), method


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


def _episodic_rows(method, rewards_by_seed, gravities):
    return [
        {"method": method, "seed_index": seed, "trial": t, "reward": r, "gravity": gravities[t]}
        for seed, rewards in enumerate(rewards_by_seed)
        for t, r in enumerate(rewards)
    ]


def test_segment_claims_count_pairs_against_the_bars() -> None:
    """Segment BAM's claim rows: pairs at >= 0.7 x GT (and the median), pairs within 10 % on
    trial 2, first visits against recursive Bayes; "not run" rows without segment BAM."""
    gravities = [9.81] * 4 + [3.72] * 4 + [9.81] * 4  # first visits at 0 and 4, revisit at 8
    first = [0.72, 0.8, 0.6, 1.0, 0.85]  # x GT 0.4 on the revisit's trial 1: 4 of 5 >= 0.7
    second = [0.95, 0.85, 1.0, 0.92, 0.5]  # trial 2: 3 of 5 within 10 %
    learner = [
        [0.0, 0.4, 0.4, 0.4, 0.0, 0.7, 0.7, 0.7, 0.4 * a, 0.4 * b, 0.4, 0.4]
        for a, b in zip(first, second, strict=True)
    ]
    slow = [[0.0, 0.0, 0.4, 0.4, 0.0, 0.0, 0.7, 0.7, 0.0, 0.0, 0.4, 0.4]] * 5
    rows = _episodic_rows("bam_segments", learner, gravities)
    rows += _episodic_rows("recursive", slow, gravities)
    rows += [
        {"method": "gt", "seed_index": s, "trial": t, "reward": r, "gravity": gravities[t]}
        for s in range(5)
        for t, r in ((0, 0.4), (4, 0.7), (8, 0.4))
    ]
    trials = pd.DataFrame(rows)
    one, two, visits = cartpole_segments.claims(trials, "episodic")
    assert one["section"] == "beyond" and one["holds"] == "yes"
    assert one["measured"] == "4 of 5 pairs, median ratio 0.80"
    assert two["holds"] == "no" and two["measured"] == "3 of 5 pairs"
    assert visits["holds"] == "yes" and visits["measured"].endswith("2, 2; recursive Bayes 3, 3")
    missing = cartpole_segments.claims(trials[trials["method"] != "bam_segments"], "episodic")
    assert [row["holds"] for row in missing] == ["not run"] * 3
    # a median below 0.8 fails the first bar even with enough pairs at 0.7
    lower = trials.copy()
    revisit = (lower["method"] == "bam_segments") & (lower["trial"] == 8)
    lower.loc[revisit, "reward"] = 0.4 * np.array([0.72, 0.75, 0.6, 1.0, 0.85])
    one, _, _ = cartpole_segments.claims(lower, "episodic")
    assert one["measured"] == "4 of 5 pairs, median ratio 0.75" and one["holds"] == "no"
    # continual: the episodic run's GT MPC at 9.81 is needed; median of 1, 2, 3 trials is 2
    curves = [[0.4] * 4 + [0.0] * 4 + [0.0] * k + [0.4] * (4 - k) for k in (0, 1, 2)]
    continual = pd.DataFrame(_episodic_rows("bam_segments", curves, gravities))
    (row,) = cartpole_segments.claims(continual, "continual", gt_981=0.4)
    assert row["holds"] == "yes" and "per seed 1, 2, 3, median 2" in row["measured"]
    (row,) = cartpole_segments.claims(continual, "continual")
    assert row["holds"] == "not run"


def test_reproductions_claim_table_has_segment_rows(quick_runs) -> None:
    """The results report's claim table gets segment BAM's rows from both reproductions."""
    episodic = cartpole.claims_episodic(quick_runs / "cartpole-episodic")
    continual = cartpole.claims_continual(quick_runs / "cartpole-continual")
    assert [r["section"] for r in episodic].count("beyond") == 3
    assert [r["section"] for r in continual].count("beyond") == 1
    assert all(r["holds"] != "not run" for r in episodic + continual)


def test_run_files_refuse_runs_of_other_options(tmp_path) -> None:
    """A folder reused after a change of defaults keeps the older runs under other keys: the
    report takes the current keys only, and refuses a seed with runs of both."""
    runs = tmp_path / "runs"
    runs.mkdir()
    old, new, other = (
        "bam_segments__episodic__s0__aaaaaaaaaaaa",
        "bam_segments__episodic__s0__bbbbbbbbbbbb",
        "bam_segments__episodic__s1__cccccccccccc",
    )
    for name in (old, new, other):
        (runs / f"{name}.parquet").write_bytes(b"")
    with pytest.raises(ValueError, match="different options for seed 0"):
        cartpole_segments.run_files(tmp_path, "bam_segments")
    chosen = cartpole_segments.run_files(tmp_path, "bam_segments", [new, other])
    assert [path.name for path in chosen] == [f"{new}.parquet", f"{other}.parquet"]
