"""Issue 50: a drill that would check nothing does not pass. Counts of zero or below, and an
``--only`` filter that matches no case, are usage errors (exit 2) naming the argument, where
they exited 0 after checking nothing or died with a traceback."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    "drill, argv, message",
    [
        ("fuzz", ["--cases", "0"], "--cases: expected a positive integer"),
        ("soak", ["--check-every", "0"], "--check-every: expected a positive integer"),
        ("soak", ["--stream-steps", "-1"], "--stream-steps: expected a positive integer"),
        ("bocd_cap", ["--steps", "-5"], "--steps: expected a positive integer"),
        ("bocd_cap", ["--every", "0"], "--every: expected a positive integer"),
        ("shared_sweeps", ["--repeats", "0"], "--repeats: expected a positive integer"),
        ("address_space", ["--only", "a typo"], "--only 'a typo' matches no case"),
    ],
)
def test_a_drill_that_would_check_nothing_is_a_usage_error(drill, argv, message, capsys):
    main = importlib.import_module(f"bam_rl.drills.{drill}").main
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
