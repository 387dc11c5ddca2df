"""Issue 28, item 8: a sweep's loky workers die with it; seeds and worker counts are checked.

Each reproducer failed on main before: the workers of a SIGKILLed sweep stayed alive (4 of 4
processes 10 s later), ``--agent-kwargs '{"seed": 5}'`` ended in "multiple values for
argument 'seed'", and ``--jobs 1000000`` in joblib's "Numeric literal … is too large".
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from bam_rl.harness import make_grid, run_many
from bam_rl.harness.cli import main
from bam_rl.harness.sweeps import MAX_JOBS

SWEEP = """
import os
from bam_rl.harness import make_grid, run_many
grid = make_grid(["ucb"], {"b": "bam_rl/SwitchingBandit-v0"}, seeds=200, n_steps=50_000)
print(os.getpid(), flush=True)
run_many(grid, backend="loky", n_jobs=2, progress=False)
"""


def _children(pid: int) -> set[int]:
    out = subprocess.run(["ps", "-eo", "pid,ppid"], capture_output=True, text=True).stdout
    rows = [line.split() for line in out.splitlines()[1:]]
    return {int(child) for child, parent in rows if int(parent) == pid}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not open(f"/proc/{pid}/stat").read().split()[2] == "Z"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc (Linux)")
def test_loky_workers_exit_when_the_sweep_is_killed():
    sweep = subprocess.Popen(
        [sys.executable, "-c", SWEEP], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    pid = int(sweep.stdout.readline())
    deadline = time.monotonic() + 60
    workers: set[int] = set()
    while len(workers) < 2 and time.monotonic() < deadline:  # two workers and their trackers
        time.sleep(0.5)
        workers = _children(pid)
    assert len(workers) >= 2
    os.kill(pid, signal.SIGKILL)
    sweep.wait()
    deadline = time.monotonic() + 15
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.5)
    survivors = [w for w in workers if _alive(w)]
    for worker in survivors:
        os.kill(worker, signal.SIGKILL)
    assert not survivors


def test_agent_kwargs_cannot_set_the_seed(capsys):
    with pytest.raises(ValueError, match="must not set 'seed'"):
        make_grid(
            ["ucb"],
            {"b": "bam_rl/SwitchingBandit-v0"},
            1,
            n_steps=5,
            agent_kwargs={"ucb": {"seed": 5}},
        )
    argv = ["run", "--env", "bam_rl/SwitchingBandit-v0", "--agent", "ucb", "--steps", "5"]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--agent-kwargs", '{"seed": 5}', "--no-progress"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--seeds" in err and "--root-seed" in err and "Traceback" not in err


@pytest.mark.parametrize("jobs", [10**6, MAX_JOBS + 1, -(os.cpu_count() or 1) - 1, 0])
def test_worker_counts_are_bounded(jobs, capsys):
    grid = make_grid(["ucb"], {"b": "bam_rl/SwitchingBandit-v0"}, 1, n_steps=5)
    with pytest.raises(ValueError, match=r"n_jobs must be an int in \[1, 512\]"):
        run_many(grid, backend="loky", n_jobs=jobs, progress=False)
    argv = ["run", "--env", "bam_rl/SwitchingBandit-v0", "--agent", "ucb", "--steps", "5"]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--jobs", str(jobs), "--no-progress"])
    assert exit_info.value.code == 2
    assert "--jobs" in capsys.readouterr().err
