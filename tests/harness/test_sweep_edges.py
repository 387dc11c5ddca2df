"""Sweeps at their edges (issue 39, defect 8): empty shards, full disks, runs others finished.

Reproducers on main before: ``--shard 1/2`` on a one-run grid ended in ``KeyError: 'method'``;
a write refused for its size (``RLIMIT_FSIZE``, as on a full disk) in a raw pyarrow
traceback; and a 4-run sweep of which another process finished 2 runs mid-way closed with
"2 computed, 0 loaded, 0 by others".
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bam_rl.cli import main
from bam_rl.harness import sweeps
from bam_rl.harness.sweeps import make_grid, run_many

RUN = [
    "run", "--env", "bam_rl/SwitchingBandit-v0", "--agent", "ucb", "--no-progress",
    "--backend", "serial",
]  # fmt: skip


def test_an_empty_shard_runs_nothing_and_says_so(tmp_path, capsys):
    assert main([*RUN, "--steps", "10", "--seeds", "1", "--shard", "1/2"]) == 0
    out = capsys.readouterr().out
    assert "shard 1/2" in out and "no runs" in out
    out_dir = tmp_path / "out"
    assert main([*RUN, "--steps", "10", "--out", str(out_dir), "--shard", "1/2"]) == 0
    assert "no runs" in capsys.readouterr().out
    assert not [p for p in out_dir.iterdir()]
    frame = run_many([], backend="serial", out_dir=tmp_path / "api", progress=False)
    assert frame.empty and frame.attrs["sweep"]["computed"] == []


FULL_DISK = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
from bam_rl.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_a_full_disk_is_one_runtime_error_line_and_a_rerun_completes(fmt, tmp_path):
    out = tmp_path / "out"
    argv = [*RUN, "--steps", "3000", "--seeds", "2", "--format", fmt, "--out", str(out)]
    failed = subprocess.run(
        [sys.executable, "-c", FULL_DISK, *argv], capture_output=True, text=True, timeout=300
    )
    assert failed.returncode == 1, failed.stderr
    assert "Traceback" not in failed.stderr
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bam-rl run: error:"), failed.stderr
    assert "File too large" in lines[0] and str(out) in lines[0]
    assert sorted(p.name for p in out.iterdir()) == []  # nothing half-written
    assert main(argv) == 0
    assert len(list(out.glob(f"*.{fmt}"))) == 2


def test_runs_other_processes_finished_mid_sweep_are_counted(tmp_path, monkeypatch):
    grid = make_grid(["ucb"], {"b": "bam_rl/SwitchingBandit-v0"}, 4, n_steps=20)
    real = sweeps.execute_run
    calls: list[str] = []

    def with_a_neighbour(spec):
        calls.append(spec.key)
        if len(calls) == 1:  # while this run computes, another sweep finishes runs 2 and 3
            run_many(grid[2:], backend="serial", out_dir=tmp_path, progress=False)
        return real(spec)

    monkeypatch.setattr(sweeps, "execute_run", with_a_neighbour)
    frame = run_many(grid, backend="serial", out_dir=tmp_path, progress=False)
    stats = frame.attrs["sweep"]
    assert len(stats["computed"]) == 2 and stats["loaded"] == 0 and stats["by_others"] == 2
    assert len(stats["computed"]) + stats["loaded"] + stats["by_others"] == len(grid)
    assert len(frame) == 4 * 20


def test_the_closing_line_counts_every_run(tmp_path, capsys, monkeypatch):
    out: Path = tmp_path / "out"
    argv = [*RUN, "--steps", "20", "--seeds", "4", "--out", str(out)]
    assert main([*argv, "--shard", "0/2"]) == 0
    capsys.readouterr()
    assert main(argv) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "2 computed here, 2 loaded, 0 computed by other processes" in last
