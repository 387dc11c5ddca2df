"""The recurring-worlds measures of issue 52 on hand-made arrays: recovery time, the scored
steps after changes, identification under the majority mapping, believed worlds, and the
tables built from run-file rows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from bam_rl.experiments import recurring_metrics as metrics


def test_recovery_time_counts_trials_until_the_previous_level():
    assert metrics.recovery_time([0.9, 0.95], 0.8) == 1
    assert metrics.recovery_time([0.2, 0.5, 0.81], 0.8) == 3
    assert metrics.recovery_time([0.2, 0.5], 0.8) == 3  # never: the visit's length + 1
    assert math.isnan(metrics.recovery_time([0.2], float("nan")))
    with pytest.raises(ValueError, match="scores"):
        metrics.recovery_time([], 0.5)


def test_change_mask_skips_steps_after_each_change_and_the_start():
    truth = np.array([1] * 5 + [2] * 4 + [1] * 3)
    np.testing.assert_array_equal(
        metrics.change_mask(truth, skip=2),
        [False, False, True, True, True, False, False, True, True, False, False, True],
    )
    assert metrics.change_mask(truth, skip=0).all()
    with pytest.raises(ValueError, match="skip"):
        metrics.change_mask(truth, skip=-1)


def test_identification_uses_the_majority_mapping():
    # believed 7 ↔ world 10, believed 3 ↔ world 4 (2 of 3 steps), one step missed
    truth = np.array([10, 10, 10, 4, 4, 4, 10, 10])
    belief = np.array([7, 7, 7, 3, 3, 7, 7, 7])
    assert metrics.identification_accuracy(belief, truth, skip=0) == pytest.approx(7 / 8)
    # two believed worlds for one true world both map to it (a split is not a miss here)
    assert metrics.identification_accuracy([1, 1, 2, 2], [5, 5, 5, 5], skip=0) == 1.0
    # one believed world for two true worlds: only the majority's steps are right
    assert metrics.identification_accuracy([0, 0, 0, 0, 0], [1, 1, 1, 2, 2], skip=0) == 0.6
    # a missing belief is wrong; only scored steps (after the skip) count
    assert metrics.identification_accuracy([np.nan, 1, 1, 1], [3, 3, 3, 3], skip=0) == 0.75
    assert metrics.identification_accuracy([np.nan, 1, 1, 1], [3, 3, 3, 3], skip=1) == 1.0
    assert math.isnan(metrics.identification_accuracy([1, 1], [3, 3], skip=5))
    with pytest.raises(ValueError, match="same shape"):
        metrics.identification_accuracy([1, 2], [1])


def test_majority_ties_go_to_the_true_world_seen_first():
    assert metrics.majority_mapping([5, 5, 5, 5], [2, 9, 9, 2]) == {5.0: 2}


def test_believed_worlds_after_the_first_quarter():
    belief = np.array([0, 1, 2, 3, 0, 0, 4, 0])
    # the first quarter of 8 steps is 2 steps; after it: 2, 3, 0, 0, 4, 0 → 4 worlds
    assert metrics.believed_worlds(belief) == 4
    # after the first half: 0, 0, 4, 0 → 2 worlds
    assert metrics.believed_worlds(belief, start=0.5) == 2
    assert math.isnan(metrics.believed_worlds([np.nan, np.nan]))
    with pytest.raises(ValueError, match="start"):
        metrics.believed_worlds(belief, start=1.0)


def _steps(belief, truth, method="m", seed=0):
    return pd.DataFrame(
        {
            "env": "Pendulum",
            "setting": "continual",
            "method": method,
            "seed_index": seed,
            "step": np.arange(len(truth)),
            "context_g": truth,
            **({"belief_world": belief} if belief is not None else {}),
        }
    )


def test_world_table_reads_the_belief_column_and_is_nan_without_one():
    truth = np.repeat([10.0, 3.72, 10.0], 30)
    belief = np.repeat([0.0, 1.0, 0.0], 30)
    rows = pd.concat([_steps(belief, truth), _steps(None, truth, method="r")])
    table = metrics.world_table(rows, {"Pendulum": "g"}).set_index("method")
    assert table.loc["m", "identification"] == 1.0
    assert table.loc["m", "worlds"] == 2 and table.loc["m", "true_worlds"] == 2
    assert math.isnan(table.loc["r", "identification"]) and math.isnan(table.loc["r", "worlds"])


def test_recovery_table_scores_revisits_against_the_previous_visit():
    order = ("A", "B", "A")
    scored = pd.DataFrame(
        {
            "env": "E",
            "setting": "continual",
            "method": "m",
            "seed_index": 0,
            "trial": range(6),
            "visit": [0, 0, 1, 1, 2, 2],
            "relative": [0.5, 0.9, 0.1, 0.2, 0.6, 0.95],
        }
    )
    table = metrics.recovery_table(scored, order)
    assert len(table) == 1
    row = table.iloc[0]
    assert (row["visit"], row["first"], row["level"], row["recovery"]) == (2, 0.6, 0.9, 2.0)


def test_paired_returns_against_a_baseline():
    trials = pd.DataFrame(
        {
            "env": "E",
            "setting": "in_trial",
            "method": ["m", "m", "b", "b"],
            "seed_index": [0, 1, 0, 1],
            "trial": 0,
            "score": [3.0, 5.0, 1.0, 2.0],
            "relative": [0.3, 0.5, 0.1, 0.2],
        }
    )
    table = metrics.paired_returns(trials, "b").set_index("method")
    assert table.loc["m", "minus_baseline"] == pytest.approx(2.5)
    assert table.loc["m", "minus_baseline_se"] == pytest.approx(np.std([2.0, 3.0], ddof=1) / 2**0.5)
    assert table.loc["b", "minus_baseline"] == 0.0


def test_grid_adds_the_peers_and_settings_only_when_asked():
    from bam_rl.experiments import recurring

    default = recurring.grid(1, envs=["Pendulum"])
    assert {r.method for r in default} == set(recurring.METHODS)
    assert {r.config for r in default} == {"Pendulum-episodic", "Pendulum-continual"}
    settings = ("episodic", "continual", "in_trial", "stationary")
    runs = recurring.grid(1, envs=["Pendulum"], settings=settings, peers=True)
    peers = {(r.config, r.method) for r in runs if r.method in recurring.PEERS}
    assert {config for config, _ in peers} == {
        "Pendulum-continual",
        "Pendulum-in_trial",
        "Pendulum-stationary",
    }
    # the default runs are the same runs (the same keys: their files are reused)
    assert {r.key for r in default} <= {r.key for r in runs}
    (in_trial,) = [r for r in runs if r.config == "Pendulum-in_trial" and r.method == "gt"]
    points = in_trial.env_kwargs["changes"]["g"]["piecewise"]["points"]
    assert in_trial.env_kwargs["notify"] == "none" and in_trial.n_episodes == 8
    assert list(points)[:3] == ["0", "150", "300"] and len(points) == 10
    (window,) = [
        r for r in runs if r.config == "Pendulum-continual" and r.method == "recent_window"
    ]
    assert window.agent_kwargs["window_steps"] == recurring.WINDOW_STEPS
    # the in-trial setting runs on Pendulum-v1 and the cart-pole unless environments are named
    unnamed = recurring.grid(1, settings=("in_trial",), methods=["gt"])
    assert {r.config for r in unnamed} == {"Pendulum-in_trial", "CartPoleSwingUp-in_trial"}
    with pytest.raises(ValueError, match="settings must be some of"):
        recurring._check_settings(["nosuch"])


def test_report_shows_the_issue52_tables_when_present(tmp_path):
    from bam_rl.experiments.report import _extra_tables

    assert _extra_tables("recurring-worlds", tmp_path) == []
    pd.DataFrame({"env": ["Pendulum"], "first": [0.8123456]}).to_csv(
        tmp_path / "recovery.csv", index=False
    )
    ((title, header, rows),) = _extra_tables("recurring-worlds", tmp_path)
    assert "recovery time" in title and header == ["env", "first"]
    assert rows == [["Pendulum", "0.812"]]
    assert _extra_tables("tracking", tmp_path) == []


def test_cli_recurring_options_are_checked(capsys):
    from bam_rl.cli import main

    for argv, message in (
        (["reproduce", "tracking", "--peers"], "recurring-worlds only"),
        (["reproduce", "recurring-worlds", "--settings", "nosuch"], "unknown 'nosuch'"),
        (["reproduce", "recurring-worlds", "--envs", "Nope"], "unknown 'Nope'"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err


def test_a_missing_gt_trial_scores_nan_not_one():
    """Regression: a trial without GT MPC's (an unfinished grid) scored 1 when its return
    was non-negative (the cost branch), which counted as a pass."""
    from bam_rl.experiments.recurring import relative

    np.testing.assert_array_equal(np.isnan(relative([5.0, -3.0], [np.nan, np.nan])), [True, True])
    np.testing.assert_allclose(relative([5.0, -200.0], [10.0, -100.0]), [0.5, 0.5])


def test_named_within_reads_the_belief_steps_after_each_change():
    truth = np.array([1] * 6 + [2] * 6 + [1] * 6 + [2] * 2)
    belief = np.array([0] * 6 + [0, 0, 5, 5, 5, 5] + [5, 0, 0, 0, 0, 0] + [5, 5])
    # changes at 6 (to 2), 12 (to 1), 18 (to 2, too short for 2 steps)
    np.testing.assert_array_equal(metrics.named_within(belief, truth, steps=2), [True, True])
    np.testing.assert_array_equal(metrics.named_within(belief, truth, steps=1), [False, True, True])
    with pytest.raises(ValueError, match="steps"):
        metrics.named_within(belief, truth, steps=-1)
    assert metrics.named_within([0, 0, 0], [1, 1, 1]).size == 0  # a stationary run


@pytest.mark.parametrize(
    "options",
    [
        {"envs": ["Nope"]},
        {"envs": []},
        {"peers": "yes"},
        {"settings": ["nope"]},
        {"methods": ["nope"]},
    ],
)
def test_the_grid_refuses_what_it_cannot_run(options):
    """Review of issue 52: the Python door checks what the CLI checks (a misspelt name ran
    nothing or raised a KeyError; a string was iterated letter by letter)."""
    from bam_rl.experiments.recurring import grid

    with pytest.raises(ValueError, match=next(iter(options))):
        grid(1, quick=True, **options)


def test_one_environment_may_be_named_by_a_string():
    from bam_rl.experiments.recurring import grid

    assert grid(1, quick=True, envs="Pendulum") == grid(1, quick=True, envs=["Pendulum"])
