"""Every ``--quick`` output says it is a smoke test (issue 27); paper-scale outputs do not."""

from __future__ import annotations

import matplotlib
import pandas as pd

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bam_rl.cli import main
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


def test_a_reproduction_ends_with_its_claims_counted(tmp_path, capsys):
    """Issue 49: after its (long) table, ``reproduce`` prints one line counting the verdicts
    of the experiment's claims, the ones ``bam-rl report`` tabulates."""
    from bam_rl.cli.reproduce import _claims_line
    from bam_rl.experiments import get_claims

    argv = ["reproduce", "tracking", "--quick", "--seeds", "1", "--out", str(tmp_path)]
    assert main([*argv, "--no-progress"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    rows = get_claims("tracking")(tmp_path / "tracking")
    assert last.startswith(f"tracking: the paper's claims: {_claims_line(rows)} ")
    assert "smoke test" in last and f"bam-rl report {tmp_path}" in last
    holds = sum(row["holds"] == "yes" for row in rows)
    assert f"{holds} of {len(rows)} hold" in last


def test_the_claims_line_counts_every_verdict():
    from bam_rl.cli.reproduce import _claims_line

    rows = [{"holds": v} for v in ("yes", "yes", "partly", "no", "not run", "not run")]
    assert _claims_line(rows) == "2 of 6 hold, 1 partly, 1 does not, 2 not run"
    assert _claims_line([]) == "0 of 0 hold, 0 partly, 0 do not, 0 not run"
