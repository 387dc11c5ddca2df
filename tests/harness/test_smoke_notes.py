"""Every ``--quick`` output says it is a smoke test (issue 27); paper-scale outputs do not."""

from __future__ import annotations

import matplotlib
import pandas as pd

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bam_rl.harness.cli import main
from bam_rl.harness.plotting import (
    SMOKE_NOTE,
    count_text,
    mark_smoke_test,
    save_figure,
    smoke_test,
)


def test_a_quick_run_marks_its_summary_and_its_table(tmp_path, capsys):
    argv = ["reproduce", "tracking", "--quick", "--seeds", "1", "--out", str(tmp_path)]
    assert main([*argv, "--no-progress"]) == 0
    summary = pd.read_csv(tmp_path / "tracking" / "tracking_summary.csv")
    assert set(summary["note"]) == {SMOKE_NOTE}
    assert f"({SMOKE_NOTE})" in capsys.readouterr().out


def test_figures_carry_the_note_only_in_a_smoke_test(tmp_path):
    for active in (True, False):
        figure, _ = plt.subplots()
        with smoke_test(active):
            save_figure(figure, tmp_path / "f.png")
        texts = [t.get_text() for t in figure.texts]
        assert (SMOKE_NOTE.upper() in texts) is active
        plt.close(figure)


def test_paper_scale_summaries_are_unchanged_and_counts_agree():
    frame = pd.DataFrame({"method": ["bam"], "mse": [0.1]})
    assert mark_smoke_test(frame) is frame
    with smoke_test():
        assert list(mark_smoke_test(frame).columns) == ["method", "mse", "note"]
    assert count_text(1, "seed") == "1 seed" and count_text(2, "seed") == "2 seeds"
