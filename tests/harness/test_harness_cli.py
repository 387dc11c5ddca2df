"""Tests of the bam-rl command line."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from harness_testutils import run_argv

from bam_rl.cli import main
from bam_rl.harness import AGENTS, ENV_IDS

BANDIT = "bam_rl/SwitchingBandit-v0"
RUN = run_argv(BANDIT, "ucb,random", 200, "--seeds", "2")


def console_script() -> str:
    script = Path(sys.executable).with_name("bam-rl")
    if script.exists():
        return str(script)
    found = shutil.which("bam-rl")
    if found is None:
        pytest.skip("the bam-rl console script is not installed")
    return found


def test_run_end_to_end_and_resume(tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main([*RUN, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "mean_total_reward" in printed and "mean_total_regret" in printed
    assert "ucb" in printed and "random" in printed
    files = sorted(out.glob("*.parquet"))
    assert len(files) == 4
    frame = pd.concat(pd.read_parquet(p) for p in files)
    assert len(frame) == 4 * 200 and set(frame["method"]) == {"ucb", "random"}
    mtimes = [p.stat().st_mtime_ns for p in files]
    assert main([*RUN, "--out", str(out)]) == 0  # resumes: nothing recomputed
    again = capsys.readouterr().out
    assert again.splitlines()[:-1] == printed.splitlines()[:-1]
    assert "4 computed here, 0 loaded" in printed.splitlines()[-1]
    assert "0 computed here, 4 loaded" in again.splitlines()[-1]
    assert [p.stat().st_mtime_ns for p in files] == mtimes


def test_run_in_memory_with_kwargs_and_episodes(capsys):
    assert (
        main(
            [
                "run",
                "--env",
                BANDIT,
                "--agent",
                "thompson-forgetting",
                "--episodes",
                "2",
                "--seeds",
                "1",
                "--backend",
                "serial",
                "--no-progress",
                "--env-kwargs",
                '{"max_steps": 25, "config_seed": 3}',
                "--agent-kwargs",
                '{"forgetting": 0.5}',
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "thompson-forgetting" in printed and " 50 " in printed


def test_console_script_runs_a_tiny_sweep(tmp_path):
    result = subprocess.run(
        [
            console_script(),
            *RUN,
            "--out",
            str(tmp_path),
            "--format",
            "csv",
            "--jobs",
            "2",
            "--backend",
            "loky",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "mean_total_regret" in result.stdout
    assert len(list(tmp_path.glob("*.csv"))) == 4


def test_demo_runs_and_writes_only_with_out(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["demo"]) == 0
    printed = capsys.readouterr().out
    assert "posterior-mean MSE" in printed and "BAM" in printed and "recursive" in printed
    assert list(tmp_path.iterdir()) == []
    assert main(["demo", "--steps", "50", "--out", "demo"]) == 0
    frame = pd.read_csv(tmp_path / "demo" / "demo_tracking.csv")
    assert len(frame) == 2 * 50 and "belief_remembered" in frame.columns


def test_list_names_every_env_and_agent(capsys):
    assert main(["list"]) == 0
    printed = capsys.readouterr().out
    for name in (*ENV_IDS, *AGENTS):
        assert name in printed
    from bam_rl.envs import NONSTATIONARY_ID, RECURRING_IDS

    for env_id in RECURRING_IDS:
        assert f"  {env_id}\n" in printed
    assert NONSTATIONARY_ID in printed and "--env-kwargs with env and changes" in printed


@pytest.mark.parametrize(
    ("argv", "value", "accepted"),
    [
        (["run", "--env", BANDIT, "--agent", "ucb,nope", "--steps", "5"], "'nope'", AGENTS),
        (
            ["run", "--env", "bam_rl/Nope-v0", "--agent", "ucb", "--steps", "5"],
            "'bam_rl/Nope-v0'",
            ENV_IDS,
        ),
    ],
)
def test_unknown_names_exit_2_naming_the_value_and_the_accepted_ones(argv, value, accepted, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    error = capsys.readouterr().err
    assert value in error
    for name in accepted:
        assert name in error


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--env", "bam_rl/BinomialStream-v0", "--agent", "ucb", "--steps", "5"],
        ["run", "--env", BANDIT, "--agent", "ucb", "--steps", "0"],
        ["run", "--env", BANDIT, "--agent", "ucb", "--steps", "5", "--episodes", "1"],
        ["run", "--env", BANDIT, "--agent", "ucb", "--steps", "5", "--backend", "dask"],
        ["run", "--env", BANDIT, "--agent", "ucb", "--steps", "5", "--env-kwargs", "{oops"],
        ["run", "--agent", "ucb", "--steps", "5"],
        ["frobnicate"],
        [],
    ],
)
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert capsys.readouterr().err


def test_console_script_unknown_agent_exit_code():
    result = subprocess.run(
        [console_script(), "run", "--env", BANDIT, "--agent", "nope", "--steps", "5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "unknown agent 'nope'" in result.stderr and "thompson-bam" in result.stderr


def test_reproduce_takes_runs_as_the_seeds_count() -> None:
    from bam_rl.cli import build_parser

    args = build_parser().parse_args(["reproduce", "piecewise-bandits", "--runs", "7"])
    assert args.seeds == 7
    assert build_parser().parse_args(["reproduce", "piecewise-bandits"]).seeds is None
