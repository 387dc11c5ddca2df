"""Parallel sweeps: ``bam-rl reproduce bandits`` with ``--jobs 1`` against ``--jobs 2``, and
the same kind of grid through ``run_many`` on Ray (a local cluster started by the sweep).

* ``reproduce``: the command a user runs, as a subprocess, each into a fresh output
  directory (the sweep resumes from existing run files otherwise); ``--quick`` by default
  (the full reproduction runs 10 configurations × 5 seeds × 10,000 steps per method and
  setting, far too long for a benchmark here); bar: ``--jobs 2`` ≥ 1.7× faster.
* Ray: one setting of the quick bandit grid through ``run_many(backend="ray", n_jobs=2)``
  against ``backend="serial"`` in one fresh process each; the Ray time includes
  ``ray.init`` of the local cluster (reported separately when Ray prints it). Reported, no bar.

Speed-ups need free cores: the load average is printed with each timing.

Usage: ``python -m bam_rl.bench.sweeps [--full] [--no-ray]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

Row = tuple  # (workload, ours, peer, bar, met)
SPEEDUP_BAR = 1.7

_RAY_SNIPPET = """
import sys, time
from bam_rl.harness import make_grid, run_many
from bam_rl.experiments.bandits import METHODS, bandit_configs
steps, seeds, backend = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
grid = make_grid(list(METHODS), bandit_configs((10,), 2, steps), seeds=seeds, n_steps=steps)
start = time.perf_counter()
if backend == "ray":
    import ray
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    print("INIT", time.perf_counter() - start)
run_many(grid, backend=backend, n_jobs=2 if backend != "serial" else 1, progress=False)
print("WALL", time.perf_counter() - start)
"""


def _load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def reproduce_seconds(jobs: int, quick: bool) -> tuple[float, float]:
    """Wall and CPU (all processes) seconds of ``bam-rl reproduce bandits`` into a fresh
    directory."""
    out = tempfile.mkdtemp(prefix="bench-sweeps-")
    command = [
        sys.executable,
        "-m",
        "bam_rl",
        "reproduce",
        "bandits",
        "--jobs",
        str(jobs),
        "--out",
        out,
        "--no-progress",
    ] + (["--quick"] if quick else [])
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return float("nan"), float("nan")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return seconds, cpu


def grid_seconds(backend: str, steps: int, seeds: int) -> tuple[float, float]:
    """(wall, init) seconds of the bandit grid through ``run_many`` on ``backend``."""
    done = subprocess.run(
        [sys.executable, "-c", _RAY_SNIPPET, str(steps), str(seeds), backend],
        capture_output=True,
        text=True,
        check=False,
    )
    values = {
        line.split()[0]: float(line.split()[1])
        for line in done.stdout.splitlines()
        if line.startswith(("INIT", "WALL"))
    }
    if done.returncode != 0 or "WALL" not in values:
        print(done.stderr[-2000:], file=sys.stderr)
        return float("nan"), float("nan")
    return values["WALL"], values.get("INIT", 0.0)


def sweep_rows(quick: bool = True, ray: bool = True, smoke: bool = False) -> list[Row]:
    """Rows: the reproduce speed-up and (when Ray is installed) Ray against serial.

    ``smoke`` skips the reproduction and runs a tiny grid (the bench's ``--quick``)."""
    rows: list[Row] = []
    if not smoke:
        mode = "--quick" if quick else "full"
        serial, serial_cpu = reproduce_seconds(1, quick)
        print(
            f"  reproduce bandits {mode} --jobs 1: {serial:.1f} s wall, {serial_cpu:.1f} s CPU "
            f"({_load()})"
        )
        parallel, parallel_cpu = reproduce_seconds(2, quick)
        print(
            f"  reproduce bandits {mode} --jobs 2: {parallel:.1f} s wall, {parallel_cpu:.1f} s "
            f"CPU ({_load()})"
        )
        rows.append(
            (
                f"`bam-rl reproduce bandits {mode}`: --jobs 2 (peer: --jobs 1), wall; CPU "
                f"{parallel_cpu:.0f} s vs {serial_cpu:.0f} s",
                parallel,
                serial,
                f"ratio ≥ {SPEEDUP_BAR}",
                serial >= SPEEDUP_BAR * parallel,
            )
        )
    if ray:
        try:
            import ray as _ray  # noqa: F401
        except ImportError:
            rows.append(
                (
                    "run_many on Ray (NOT INSTALLED: pip install 'bam-rl[ray]')",
                    float("nan"),
                    float("nan"),
                    None,
                    None,
                )
            )
            return rows
        steps, seeds = (300, 1) if smoke else (2000, 2)
        serial, _ = grid_seconds("serial", steps, seeds)
        on_ray, init = grid_seconds("ray", steps, seeds)
        print(
            f"  bandit grid {steps} steps x {seeds} seeds: serial {serial:.1f} s, Ray (2 CPUs) "
            f"{on_ray:.1f} s of which ray.init {init:.1f} s ({_load()})"
        )
        rows.append(
            (
                f"run_many bandit grid ({steps} steps): Ray local cluster, 2 CPUs, incl. "
                f"init {init:.1f} s (peer: serial)",
                on_ray,
                serial,
                None,
                None,
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--full", action="store_true", help="the full reproduction (hours)")
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    for name, ours, peer, bar, met in sweep_rows(not args.full, not args.no_ray):
        print(
            f"{name}: {ours:.1f} s, peer {peer:.1f} s, ratio {peer / ours:.2f}, bar {bar}, "
            f"{'' if met is None else ('met' if met else 'NOT met')}"
        )


if __name__ == "__main__":
    main()
