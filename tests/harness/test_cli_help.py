"""``bam-rl --help``, each command's ``--help`` and a few usage errors print the text and exit
with the status recorded in ``tests/harness/data/cli_help/<python>/`` (issue 43: splitting the CLI
into a package changes no word of it).

argparse words and wraps help differently from one Python to the next, so the fixtures are
per Python version (a version without fixtures skips). Regenerate them deliberately, and say so
in the commit, with ``python tests/harness/test_cli_help.py`` (it writes the running Python's).
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import pytest

#: Where the fixtures of the running Python live.
FIXTURES = (
    Path(__file__).parent / "data" / "cli_help" / f"{sys.version_info[0]}.{sys.version_info[1]}"
)
#: Help screens: the fixture's name and the arguments.
HELP = {
    "main": ["--help"],
    **{
        command: [command, "--help"]
        for command in ("demo", "run", "list", "reproduce", "report", "record", "bench", "drill")
    },
}
#: Usage errors (stderr and exit status), one fixture file for all.
ERRORS = [
    [],
    ["nosuch"],
    ["run", "--steps", "5", "--seed", "3"],
    ["run", "--env", "x"],
    ["demo", "--steps", "0"],
    ["list", "--nothing"],
    ["reproduce", "nosuch"],
    ["record", "--seed", "-1"],
    ["bench", "--only", "nosuch"],
    ["bench", "--only", "soak"],
    ["drill", "nosuch"],
]
#: The terminal width the fixtures were written at (argparse reads $COLUMNS).
COLUMNS = "100"


def render(argv: list[str]) -> tuple[int, str, str]:
    """``bam-rl argv``'s exit status, stdout and stderr (in this process)."""
    from bam_rl.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as error:
            status = error.code if isinstance(error.code, int) else 1
    return status, out.getvalue(), err.getvalue()


def errors_text() -> str:
    """Every case of :data:`ERRORS`: the command, its exit status and its stderr."""
    parts = []
    for argv in ERRORS:
        status, _, err = render(argv)
        parts.append(f"$ bam-rl {' '.join(argv)}\nexit {status}\n{err}")
    return "\n".join(parts)


def fixture_names() -> list[str]:
    return [*HELP, "errors"]


def produce(name: str) -> str:
    if name == "errors":
        return errors_text()
    status, out, err = render(HELP[name])
    return f"exit {status}\n{out}{err}"


@pytest.mark.skipif(
    not FIXTURES.is_dir(), reason=f"no CLI help fixtures for Python {FIXTURES.name}"
)
@pytest.mark.parametrize("name", fixture_names())
def test_help_and_usage_errors_are_unchanged(name, monkeypatch):
    monkeypatch.setenv("COLUMNS", COLUMNS)
    monkeypatch.delenv("BAM_RL_MNIST", raising=False)
    expected = (FIXTURES / f"{name}.txt").read_text(encoding="utf-8")
    assert produce(name) == expected


if __name__ == "__main__":
    import os

    os.environ["COLUMNS"] = COLUMNS
    os.environ.pop("BAM_RL_MNIST", None)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for fixture in fixture_names():
        (FIXTURES / f"{fixture}.txt").write_text(produce(fixture), encoding="utf-8")
        print(FIXTURES / f"{fixture}.txt")
