"""Shared helpers for the command-line tests (imported by the test modules of this directory)."""

from __future__ import annotations

import pytest

from bam_rl.cli import main


def run_argv(env: str, agents: str, steps: int, *extra: str) -> list[str]:
    """``bam-rl run`` of ``agents`` on ``env`` for ``steps`` steps, serially and without a
    progress bar, followed by ``extra``."""
    return [
        "run",
        "--env",
        env,
        "--agent",
        agents,
        "--steps",
        str(steps),
        "--backend",
        "serial",
        "--no-progress",
        *extra,
    ]


def usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The standard error of ``main(argv)``, which must be a usage error (exit 2, the usage
    line, no traceback)."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "usage:" in err
    return err
