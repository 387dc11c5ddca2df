"""``bam-rl`` without tracebacks, fifth round (issue 50): each of these ended in a traceback or
a wrong sentence before.

* ``record --every`` above a trial's steps rendered everything, then died in the GIF writer
  (``OverflowError``: a GIF frame's delay is a 16-bit count of centiseconds);
* ``record --recurring --results DIR`` on another experiment's ``trials.csv``: ``KeyError``;
* a ``trials.csv`` with a row twice was reported as having "no row";
* ``reproduce … --backend ray`` without Ray: a raw ``ValueError`` (``run`` says it in a usage
  line);
* ``report`` on a ``visits.csv`` cut in the middle of a row showed the claims as "not run"
  (or measured on the cut rows) instead of saying the file is damaged.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from bam_rl.cli import main

RECORD = ["record", "--recurring", "InvertedPendulum", "--quick", "--no-progress"]


def _usage_error(capsys, argv: list[str]) -> str:
    """``main(argv)``: exit 2 with one ``error:`` line and no traceback; the message."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = [line for line in err.splitlines() if ": error: " in line]
    return line


# ------------------------------------------------------------------------ record --every
def test_record_refuses_an_every_above_the_trial_before_rendering(capsys, tmp_path):
    gif = tmp_path / "x.gif"
    message = _usage_error(capsys, [*RECORD, "--every", "20000", "--out", str(gif)])
    assert "--every 20000: every must be an int in [1, 30] (a trial has 30 steps" in message
    assert not gif.exists()


def test_the_cart_pole_recording_bounds_every_by_its_200_steps():
    from bam_rl.experiments.record import check_frame_size

    assert check_frame_size((32, 24), 200) == ((32, 24), 200)
    with pytest.raises(ValueError, match=r"every must be an int in \[1, 200\].*got 201"):
        check_frame_size((32, 24), 201)


def test_write_gif_refuses_a_frame_longer_than_a_gif_holds(tmp_path):
    from bam_rl.experiments.record import check_fps, write_gif

    black = np.zeros((8, 8, 3), dtype=np.uint8)
    white = np.full((8, 8, 3), 255, dtype=np.uint8)
    path = tmp_path / "x.gif"
    # 50 steps/s kept every 40 000th: one frame of 800 s (a GIF frame lasts at most 655.35 s)
    with pytest.raises(ValueError, match=r"fps must be >= 0\.001526 \(a GIF frame lasts at most"):
        write_gif(path, [[black]], ["caption"], quick=False, fps=50 / 40_000)
    # two identical frames of 400 s merge into one of 800 s
    with pytest.raises(ValueError, match="here 2 identical frames in a row merge into one"):
        write_gif(path, [[black, black]], ["caption"], quick=False, fps=1 / 400)
    assert not path.exists()
    write_gif(path, [[black, white]], ["caption"], quick=False, fps=1 / 400)  # distinct: fine
    assert path.stat().st_size > 0
    for fps in (0.0, -1.0, float("nan"), 1e-9):
        with pytest.raises(ValueError, match="fps must be"):
            check_fps(fps)
    assert check_fps(25) == 25.0


# ------------------------------------------------------------------------ record --results
def test_record_results_from_another_experiment_name_the_columns(capsys, tmp_path):
    folder = tmp_path / "cartpole-episodic"  # what reproduce cartpole-episodic writes
    folder.mkdir()
    pd.DataFrame(
        {"method": ["bam"], "seed_index": [0], "trial": [2], "reward": [1.0], "gravity": [9.81]}
    ).to_csv(folder / "trials.csv", index=False)
    message = _usage_error(
        capsys, [*RECORD, "--results", str(folder), "--out", str(tmp_path / "x.gif")]
    )
    assert "trials.csv is not one of 'reproduce recurring-worlds'" in message
    assert "lacks the columns env, setting, world_value, score" in message
    assert "named after 'reproduce cartpole-episodic'" in message
    assert not (tmp_path / "x.gif").exists()


def test_record_results_with_a_row_twice_say_so(capsys, tmp_path):
    row = {
        "env": "InvertedPendulum",
        "setting": "episodic",
        "seed_index": 0,
        "trial": 2,
        "world_value": 9.81,
        "score": 10.0,
    }
    rows = [
        {**row, "method": "bam_segments"},
        {**row, "method": "bam_segments"},
        {**row, "method": "recursive"},
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "trials.csv", index=False)
    message = _usage_error(
        capsys, [*RECORD, "--results", str(tmp_path), "--out", str(tmp_path / "x.gif")]
    )
    assert "has 2 rows of InvertedPendulum (episodic), method bam_segments, seed 0" in message
    assert "no row" not in message


# ------------------------------------------------------------------------ reproduce --backend
def test_reproduce_without_ray_is_a_usage_error_as_run_says(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails, installed or not
    out = tmp_path / "out"
    message = _usage_error(
        capsys,
        ["reproduce", "bandits", "--quick", "--backend", "ray", "--out", str(out), "--no-progress"],
    )
    assert "--backend ray: backend='ray' needs Ray, which is not installed" in message
    assert not out.exists()  # refused before anything ran or was written
    run = ["run", "--env", "bam_rl/SwitchingBandit-v0", "--agent", "ucb", "--steps", "5"]
    assert "needs Ray" in _usage_error(capsys, [*run, "--backend", "ray"])


# ------------------------------------------------------------------------ report
def _visits() -> pd.DataFrame:
    rows = []
    for method, first in (("bam_segments", 0.9), ("recursive", 0.2), ("bocd", 0.2)):
        for seed in range(2):
            rows.append(
                {
                    "env": "InvertedPendulum",
                    "setting": "episodic",
                    "method": method,
                    "seed_index": seed,
                    "visit": 2,
                    "world": "A",
                    "world_value": 9.81,
                    "revisit": True,
                    "gt": 100.0,
                    "first": first,
                    "to_90": 1,
                    "drop": 0.0,
                    "regret": 0.0,
                }
            )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("cut", ["in the first row", "in the last row"])
def test_report_says_a_visits_csv_cut_mid_row_is_damaged(cut, capsys, tmp_path):
    from bam_rl.experiments.report import collect

    folder = tmp_path / "recurring-worlds"
    folder.mkdir()
    text = _visits().to_csv(index=False)
    header = text.index("\n") + 1
    # the first: inside its "setting" (was "not run"); the last: inside its "regret" (the
    # claims were measured on what pandas read, the cut fields as missing values)
    end = header + len("InvertedPendulum,epis") if cut == "in the first row" else len(text) - 3
    (folder / "visits.csv").write_text(text[:end])
    problems: list[str] = []
    data = collect(tmp_path, problems.append)
    (experiment,) = [e for e in data["experiments"] if e["name"] == "recurring-worlds"]
    assert "visits.csv is damaged: it ends in the middle of a row" in experiment["problem"]
    assert all(row["measured"].startswith("unreadable: ") for row in experiment["claims"])
    assert not any(row["measured"].startswith("not run") for row in experiment["claims"])
    assert problems == [f"recurring-worlds: unreadable, skipped ({experiment['problem']})"]
    assert main(["report", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "visits.csv is damaged" in err
    assert "visits.csv is damaged" in (tmp_path / "report.md").read_text()


def test_a_whole_visits_csv_is_read_as_before(tmp_path):
    from bam_rl.experiments.report import collect

    folder = tmp_path / "recurring-worlds"
    folder.mkdir()
    _visits().to_csv(folder / "visits.csv", index=False)
    (experiment,) = [
        e for e in collect(tmp_path, print)["experiments"] if e["name"] == "recurring-worlds"
    ]
    assert experiment["problem"] is None and experiment["ran"]
    (row,) = experiment["claims"]
    assert row["holds"] == "yes" and row["measured"].startswith("segment BAM 100%")


def test_a_recorded_trial_takes_its_length_from_whichever_limit_the_run_gave():
    """A recurring run configured with ``max_steps`` (or ``max_episode_steps``) alone is
    replayed with that trial length, as with ``trial_steps`` (issue 50's review)."""
    from types import SimpleNamespace

    from bam_rl.experiments.record_recurring import recurring_trial_steps

    for key in ("trial_steps", "max_steps", "max_episode_steps"):
        assert recurring_trial_steps(SimpleNamespace(env_kwargs={key: 37}), "Pendulum") == 37
    assert recurring_trial_steps(SimpleNamespace(env_kwargs={}), "InvertedPendulum") == 300
