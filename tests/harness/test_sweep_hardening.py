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

from bam_rl.cli import main
from bam_rl.harness import make_grid, run_many
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
        return not open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU time of ``pid`` (0 once it is gone)."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _is_worker(pid: int) -> bool:
    try:
        return b"resource_tracker" not in open(f"/proc/{pid}/cmdline", "rb").read()
    except FileNotFoundError:
        return False


def _poll(condition, seconds: float) -> bool:
    """Polls ``condition`` every 0.2 s until it holds or ``seconds`` pass (a loaded machine
    starts and stops processes slowly: a bound, not a fixed sleep)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc (Linux)")
def test_loky_workers_exit_when_the_sweep_is_killed():
    sweep = subprocess.Popen(
        [sys.executable, "-c", SWEEP], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    pid = int(sweep.stdout.readline())
    children: set[int] = set()

    def running() -> bool:  # two workers past their imports, inside a run (>= 3 s of CPU)
        children.update(_children(pid))
        workers = [c for c in children if _is_worker(c)]
        return sum(_cpu_seconds(w) >= 3.0 for w in workers) >= 2

    try:
        assert _poll(running, 180), f"the sweep's workers did not start: {children}"
    finally:
        os.kill(pid, signal.SIGKILL)
        sweep.wait()
    _poll(lambda: not any(_alive(c) for c in children), 60)
    survivors = [c for c in children if _alive(c)]
    for child in survivors:
        os.kill(child, signal.SIGKILL)
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
