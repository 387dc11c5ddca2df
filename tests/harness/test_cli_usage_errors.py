"""CLI inputs that used to end in tracebacks are usage errors, exit 2 (issue 14, item 12)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from harness_testutils import run_argv, usage_error

from bam_rl.cli import main

BANDIT = "bam_rl/SwitchingBandit-v0"
RUN = run_argv(BANDIT, "ucb", 20)


@pytest.fixture
def afile(tmp_path):
    path = tmp_path / "afile"
    path.write_text("precious")
    return path


def test_out_naming_an_existing_file(afile, capsys):
    for argv in (
        ["demo", "--steps", "5", "--out", str(afile)],
        [*RUN, "--out", str(afile)],
        ["reproduce", "tracking", "--quick", "--out", str(afile)],
    ):
        err = usage_error(argv, capsys)
        assert "--out" in err and "existing file" in err
    assert afile.read_text() == "precious"


def test_out_below_a_file_or_unwritable(afile, tmp_path, capsys):
    err = usage_error([*RUN, "--out", str(afile / "sub")], capsys)
    assert "not a writable directory" in err
    if os.name == "posix" and os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        try:
            for argv in (
                [*RUN, "--out", str(locked)],
                [*RUN, "--out", str(locked / "new")],
                ["demo", "--steps", "5", "--out", str(locked)],
            ):
                assert "not a writable directory" in usage_error(argv, capsys)
        finally:
            locked.chmod(0o700)


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--seed", "-1"],
        ["demo", "--seed", "x"],
        ["demo", "--seed", str(2**64)],
        [*RUN, "--root-seed", "-1"],
    ],
)
def test_negative_or_huge_seeds(argv, capsys):
    assert "seed" in usage_error(argv, capsys)


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--steps", "99999999999999999999"],
        ["run", "--env", BANDIT, "--agent", "ucb", "--steps", "99999999999999999999"],
        ["run", "--env", BANDIT, "--agent", "ucb", "--episodes", "99999999999999999999"],
        ["run", "--env", BANDIT, "--agent", "ucb", "--steps", "5", "--seeds", "99999999999999"],
    ],
)
def test_huge_budgets_are_bounded_at_once(argv, capsys):
    start = time.perf_counter()
    err = usage_error(argv, capsys)
    assert time.perf_counter() - start < 5
    assert "expected a positive integer <=" in err


def test_in_range_values_still_work(tmp_path, capsys):
    assert main(["demo", "--steps", "20", "--seed", "3", "--out", str(tmp_path / "d")]) == 0
    assert (tmp_path / "d" / "demo_tracking.csv").is_file()
    assert main([*RUN, "--root-seed", "5", "--out", str(tmp_path / "r")]) == 0


def test_python_dash_m_bam_rl():
    listing = subprocess.run(
        [sys.executable, "-m", "bam_rl", "list"], capture_output=True, text=True, timeout=120
    )
    assert listing.returncode == 0 and "bam_rl/SwitchingBandit-v0" in listing.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "bam_rl", "demo", "--seed", "-1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "--seed" in bad.stderr


def test_option_prefixes_are_not_accepted(capsys):
    """``run --seed 3`` once ran seeds 0-2 (argparse read it as ``--seeds 3``)."""
    from bam_rl.cli import build_parser, main

    argv = ["run", "--env", "bam_rl/SwitchingBandit-v0", "--agent", "ucb", "--steps", "5"]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--seed", "3", "--no-progress"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--seed 3" in err and "--seeds" in err and "--root-seed" in err
    assert "Traceback" not in err
    parsers = [build_parser()]
    parsers += [p for a in parsers[0]._actions if a.choices for p in a.choices.values()]
    assert len(parsers) > 5 and not any(p.allow_abbrev for p in parsers)


def test_the_cli_runs_blas_single_threaded_unless_told(monkeypatch):
    """Issue 27: ``reproduce mnist --quick`` took 9.5 s with OpenBLAS's two threads and 4.7 s
    with one (idle cores), and OpenBLAS's spin-waiting threads slow down beside a busy core."""
    from threadpoolctl import ThreadpoolController

    from bam_rl import cli

    controller = ThreadpoolController()
    blas = controller.select(user_api="blas")
    if not blas.lib_controllers:
        pytest.skip("no BLAS library found by threadpoolctl")
    original = [c.num_threads for c in blas.lib_controllers]
    try:
        blas.limit(limits=2)
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
        cli._one_blas_thread()  # the user chose: left alone
        assert [
            c.num_threads for c in ThreadpoolController().select(user_api="blas").lib_controllers
        ] == [2] * len(original)
        for variable in cli.BLAS_THREAD_VARIABLES:
            monkeypatch.delenv(variable, raising=False)
        cli._one_blas_thread()
        assert {
            c.num_threads for c in ThreadpoolController().select(user_api="blas").lib_controllers
        } == {1}
    finally:
        for controller_, threads in zip(blas.lib_controllers, original, strict=True):
            controller_.set_num_threads(threads)


def test_a_misspelt_environment_names_the_closest_and_every_bam_rl_id(capsys):
    """Issue 49: the message listed the 7 core ids only, not the recurring worlds or
    ``NonStationary-v0``."""
    import gymnasium as gym

    err = usage_error(run_argv("bam_rl/RecurringCartPol-v0", "random", 5), capsys)
    assert "(did you mean bam_rl/RecurringCartPole-v0" in err
    ours = [env_id for env_id in gym.registry if env_id.startswith("bam_rl/")]
    assert len(ours) >= 22 and "bam_rl/NonStationary-v0" in ours
    assert all(env_id in err for env_id in ours)
    # case is forgiven in the suggestion
    assert "did you mean bam_rl/RecurringPendulum-v0" in usage_error(
        run_argv("bam_rl/recurringpendulum-v0", "random", 5), capsys
    )
