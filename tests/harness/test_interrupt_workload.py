"""The interrupted-sweeps check (:mod:`bam_rl.drills.interrupt`, ~1.5 minutes) as a slow
test: every SIGKILL point of a run's write, CSV and Parquet, serial and loky; after resuming,
no run is lost, duplicated or corrupted and no temporary file is left."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_sweeps_killed_at_every_point_resume_intact(capsys):
    from bam_rl.drills import interrupt

    assert interrupt.main(["--seed", "0"]) == 0
    assert " OK in " in capsys.readouterr().out


def test_the_soak_and_interrupt_checks_are_drills_not_bench_groups():
    from bam_rl import bench, drills

    assert {"soak", "interrupt"} <= set(drills.DRILLS)  # `bam-rl drill soak` (issue 43)
    assert not {"soak", "interrupt"} & set(bench.GROUPS)  # bench times; drills check
