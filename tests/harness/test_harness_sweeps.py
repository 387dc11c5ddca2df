"""Tests of bam_rl.harness.run_many: seeds, backends, files, resuming after a kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bam_rl.harness as harness
import bam_rl.harness.sweeps as sweeps
from bam_rl.harness import RunSpec, make_grid, read_run, run_many

BANDIT = "bam_rl/SwitchingBandit-v0"
CONFIGS = {
    "cfg0": (BANDIT, {"config_seed": 0, "max_steps": 60}),
    "cfg1": (BANDIT, {"config_seed": 1, "max_steps": 60}),
}


def small_grid(**kwargs):
    options = {"seeds": 2, "n_steps": 150, "root_seed": 4, **kwargs}
    return make_grid(["ucb", "thompson"], CONFIGS, **options)


def result_files(directory: Path) -> list[Path]:
    return sorted(
        p
        for p in directory.iterdir()
        if p.suffix in (".parquet", ".csv") and not p.name.startswith(".")
    )


def test_make_grid_and_common_random_numbers():
    grid = small_grid()
    assert len(grid) == 2 * 2 * 2
    assert [(s.method, s.config, s.seed_index) for s in grid[:3]] == [
        ("ucb", "cfg0", 0),
        ("ucb", "cfg0", 1),
        ("ucb", "cfg1", 0),
    ]
    by_method = {}
    for spec in grid:
        by_method.setdefault((spec.config, spec.seed_index), set()).add(spec.seeds())
    assert all(len(seeds) == 1 for seeds in by_method.values())  # same seeds for every method
    assert len({next(iter(s)) for s in by_method.values()}) == 4  # distinct otherwise
    spec = grid[0]
    expected = np.random.SeedSequence([4, zlib.crc32(b"cfg0"), 0]).generate_state(2)
    assert spec.seeds() == tuple(int(x) for x in expected)
    assert len({s.key for s in grid}) == len(grid)
    with pytest.raises(ValueError):
        RunSpec("ucb", BANDIT, n_steps=10, n_episodes=1)
    with pytest.raises(ValueError, match="unknown agent 'nope'"):
        RunSpec("nope", BANDIT, n_steps=10)
    with pytest.raises(ValueError, match="unknown environment"):
        RunSpec("ucb", "bam_rl/Nope-v0", n_steps=10)


def test_seeds_and_keys_are_the_same_in_another_process():
    grid = small_grid()
    code = textwrap.dedent("""
        from bam_rl.harness import make_grid
        grid = make_grid(["ucb", "thompson"], {
            "cfg0": ("bam_rl/SwitchingBandit-v0", {"config_seed": 0, "max_steps": 60}),
            "cfg1": ("bam_rl/SwitchingBandit-v0", {"config_seed": 1, "max_steps": 60})},
            seeds=2, n_steps=150, root_seed=4)
        for spec in grid:
            print(spec.key, *spec.seeds())
    """)
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout.split("\n")
    assert out[:-1] == [f"{s.key} {' '.join(map(str, s.seeds()))}" for s in grid]


def test_serial_sweep_rows_sorting_and_files(tmp_path):
    grid = small_grid()
    frame = run_many(grid, backend="serial", out_dir=tmp_path, progress=False)
    assert len(frame) == len(grid) * 150
    assert frame.groupby(["method", "config", "seed"]).size().eq(150).all()
    assert frame.groupby(["method", "config"])["seed_index"].nunique().eq(2).all()
    ordered = frame.sort_values(["method", "config", "seed", "step"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(frame, ordered)
    assert len(result_files(tmp_path)) == len(grid)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    # common random numbers: the same env seed for both methods per (config, seed index)
    seeds = frame.groupby(["config", "seed_index", "method"])["seed"].first().unstack()
    assert (seeds["ucb"] == seeds["thompson"]).all()
    # a run equals execute_run of its spec
    spec = grid[0]
    run = frame[
        (frame["method"] == spec.method)
        & (frame["config"] == spec.config)
        & (frame["seed_index"] == spec.seed_index)
    ].reset_index(drop=True)
    pd.testing.assert_frame_equal(run, harness.execute_run(spec))


def test_loky_matches_serial(tmp_path):
    grid = small_grid()
    serial = run_many(grid, backend="serial", progress=False)
    loky = run_many(grid, backend="loky", n_jobs=2, out_dir=tmp_path, progress=False)
    pd.testing.assert_frame_equal(loky, serial)


def test_finished_runs_are_loaded_not_recomputed(tmp_path, monkeypatch):
    grid = small_grid(seeds=1)
    first = run_many(grid, backend="serial", out_dir=tmp_path, progress=False)
    mtimes = {p: p.stat().st_mtime_ns for p in result_files(tmp_path)}

    def fail(spec):
        raise AssertionError(f"recomputed {spec}")

    monkeypatch.setattr(sweeps, "execute_run", fail)
    again = run_many(grid, backend="serial", out_dir=tmp_path, progress=False)
    pd.testing.assert_frame_equal(again, first)
    assert {p: p.stat().st_mtime_ns for p in result_files(tmp_path)} == mtimes


def test_csv_format_round_trips(tmp_path):
    grid = small_grid(seeds=1)
    parquet = run_many(grid, backend="serial", out_dir=tmp_path / "pq", progress=False)
    csv = run_many(grid, backend="serial", out_dir=tmp_path / "csv", progress=False, fmt="csv")
    assert all(p.suffix == ".csv" for p in result_files(tmp_path / "csv"))
    pd.testing.assert_frame_equal(csv, parquet)
    assert read_run(result_files(tmp_path / "csv")[0])["config"].iloc[0] == "cfg0"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"backend": "dask"}, "unknown backend 'dask'"),
        ({"fmt": "xlsx"}, "fmt"),
        ({"n_jobs": 0}, "n_jobs"),
    ],
)
def test_bad_run_many_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        run_many(small_grid(seeds=1), progress=False, **kwargs)


def test_duplicate_runs_are_refused():
    grid = small_grid(seeds=1)
    with pytest.raises(ValueError, match="duplicate"):
        run_many(grid + grid[:1], backend="serial", progress=False)


def test_ray_backend_missing_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(ValueError, match=r"pip install 'bam-rl\[ray\]'"):
        run_many(small_grid(seeds=1), backend="ray", progress=False)


# A sweep of 8 runs heavy enough (~0.3-1 s each) to be killed halfway.
KILL_GRID = textwrap.dedent("""
    from bam_rl.harness import make_grid
    GRID = make_grid(["ucb", "random"], {
        "a": ("bam_rl/SwitchingBandit-v0", {"config_seed": 0}),
        "b": ("bam_rl/SwitchingBandit-v0", {"config_seed": 1})},
        seeds=2, n_steps=20_000, root_seed=0)
""")


def test_killed_sweep_resumes_without_lost_or_duplicated_runs(tmp_path, monkeypatch):
    namespace: dict = {}
    exec(KILL_GRID, namespace)
    grid = namespace["GRID"]
    out = tmp_path / "sweep"
    out.mkdir()
    code = KILL_GRID + textwrap.dedent(f"""
        from bam_rl.harness import run_many
        run_many(GRID, backend="serial", out_dir={str(out)!r}, progress=False)
    """)
    process = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 60
        while len(result_files(out)) < 2:
            assert process.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "no result files appeared"
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    finished = {p.stem for p in result_files(out)}
    assert 2 <= len(finished) < len(grid), "kill the sweep halfway"
    assert finished <= {spec.key for spec in grid}

    executed = []
    real_execute = harness.execute_run

    def counting(spec):
        executed.append(spec.key)
        return real_execute(spec)

    monkeypatch.setattr(sweeps, "execute_run", counting)
    resumed = run_many(grid, backend="serial", out_dir=out, progress=False)
    assert sorted(executed) == sorted({spec.key for spec in grid} - finished)
    assert {p.stem for p in result_files(out)} == {spec.key for spec in grid}
    runs = resumed.groupby(["method", "config", "seed_index"]).size()
    assert len(runs) == len(grid) and runs.eq(20_000).all()

    monkeypatch.setattr(sweeps, "execute_run", real_execute)
    uninterrupted = run_many(grid, backend="serial", progress=False)
    pd.testing.assert_frame_equal(resumed, uninterrupted)


def test_ray_backend_matches_serial(tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'bam-rl[ray]')")
    grid = small_grid(seeds=1)
    serial = run_many(grid, backend="serial", progress=False)
    started_here = not ray.is_initialized()
    try:
        frame = run_many(grid, backend="ray", n_jobs=2, out_dir=tmp_path, progress=False)
    finally:
        if started_here:
            ray.shutdown()
    pd.testing.assert_frame_equal(frame, serial)
    assert len(result_files(tmp_path)) == len(grid)


def test_a_local_ray_cluster_of_two_workers_runs_the_cli_sweep(tmp_path, monkeypatch):
    """Issue 26: head (no CPUs) plus two worker nodes stand in for machines; the CLI joins
    the cluster through RAY_ADDRESS and writes the same files as a serial run."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'bam-rl[ray]')")
    from ray.cluster_utils import Cluster

    from bam_rl.cli import main

    argv = ["run", "--env", "bam_rl/SwitchingBandit-v0", "--agent", "ucb,thompson"]
    argv += ["--steps", "200", "--seeds", "2", "--no-progress", "--format", "csv"]
    assert main([*argv, "--backend", "serial", "--out", str(tmp_path / "serial")]) == 0
    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        monkeypatch.setenv("RAY_ADDRESS", cluster.address)
        assert main([*argv, "--backend", "ray", "--out", str(tmp_path / "ray")]) == 0
        nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
        assert len(nodes) == 3
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert {p.name: p.read_bytes() for p in (tmp_path / "ray").glob("*.csv")} == {
        p.name: p.read_bytes() for p in (tmp_path / "serial").glob("*.csv")
    }
