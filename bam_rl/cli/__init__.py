"""The ``bam-rl`` command line (see ARCHITECTURE.md).

Subcommands::

    bam-rl demo [--steps 300] [--seed 0] [--out DIR]      # BAM tracking a drifting stream
    bam-rl run --env ID --agent NAME[,NAME...] --steps N --seeds S [--out DIR]
               [--jobs J] [--backend serial|loky|ray]      # a sweep over run_many
    bam-rl list                                          # environment ids and agent names
    bam-rl reproduce EXPERIMENT [--quick] [--seeds N] [--jobs J] [--out DIR]  # paper figures
    bam-rl reproduce all [--skip NAME[,NAME]] ...        # every experiment, then the report
    bam-rl report DIR                                    # report.html + report.md of DIR
    bam-rl record [--out swingup.gif]                    # the swing-up animation (GIF)
    bam-rl bench [--quick] [--only GROUP ...]            # performance against peers
    bam-rl drill DRILL [DRILL ...] [--quick]             # reliability drills: pass or fail

Usage errors (an unknown agent or environment, bad numbers, an ``--out`` that is a file or
cannot be written) print a message naming the offending value and the accepted ones to
stderr and exit with status 2. Budgets are bounded (``--steps`` <= 10,000,000 per run,
``--episodes`` <= 1,000,000, ``--seeds`` <= 100,000) because a run's rows are held in
memory (about 100 bytes a step) before they are written; longer studies split into runs.
``python -m bam_rl`` is the same command.

The package has one module per command (``demo``, ``run``, ``list``, ``reproduce``,
``report``, ``record``, ``bench``, ``drill``), each owning its parser (``add``) and its handler
(``handle``); :data:`COMMANDS` is the table, in the order ``bam-rl --help`` lists them, and
:mod:`bam_rl.cli.common` holds what they share (the argument types with their bounds,
the output-path checks). This module builds the parser from the table and runs the handler.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from bam_rl.cli import bench, demo, drill, record, report, reproduce, run
from bam_rl.cli import list as list_command
from bam_rl.cli.common import docstring_summary
from bam_rl.cli.reproduce import NO_MNIST_DATA as NO_MNIST_DATA

__all__ = ["COMMANDS", "build_parser", "main"]

#: The name ``tests/harness/test_cli_agent_kwargs.py`` imports (from when the CLI was one file).
_summary = docstring_summary

#: The commands of ``bam-rl``, in the order its help lists them: each a module with
#: ``add(commands)`` (its subparser, whose defaults name ``handle``) and ``handle(args, parser)``.
COMMANDS: dict[str, ModuleType] = {
    "demo": demo,
    "run": run,
    "list": list_command,
    "reproduce": reproduce,
    "report": report,
    "record": record,
    "bench": bench,
    "drill": drill,
}


# ------------------------------------------------------------------------------ parser
class _Parser(argparse.ArgumentParser):
    """``argparse`` with exact option names (no prefixes: ``--seed`` is not ``--seeds``) and
    a suggestion of the options close to an unknown one."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def unknown(self, extras: Sequence[str]) -> None:
        """A usage error for ``extras``, naming the accepted options closest to each."""
        known = [o for action in self._actions for o in action.option_strings]
        hints = []
        for token in extras:
            if token.startswith("-"):
                close = difflib.get_close_matches(token.split("=")[0], known, n=3, cutoff=0.6)
                if close:
                    hints.append(f"{token}: did you mean {' or '.join(close)}?")
        message = f"unrecognized arguments: {' '.join(extras)}"
        self.error(message + ("; " + "; ".join(hints) if hints else ""))


def build_parser() -> _Parser:
    """The argument parser of ``bam-rl`` (one subparser per command)."""
    from bam_rl import __version__

    parser = _Parser(
        prog="bam-rl",
        description="Bayes with Adaptive Memory (BAM) for non-stationary reinforcement "
        "learning: demos, sweeps and paper reproductions.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS.values():
        command.add(commands)
    return parser


#: Environment variables by which a user sets the BLAS threads (then left as they are).
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _one_blas_thread() -> None:
    """One BLAS thread in this process unless the user chose a number.

    The linear algebra of bam-rl is many small products and factorisations, where a second
    BLAS thread costs more than it gains: ``reproduce mnist --quick`` took 9.5 s with
    OpenBLAS's default two threads and 4.7 s with one on two idle cores, and OpenBLAS threads
    spin-wait, so beside another busy process the default could be many times slower. Sweep
    workers (loky) get their own limit from joblib.
    """
    if any(os.environ.get(variable) for variable in BLAS_THREAD_VARIABLES):
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``bam-rl`` console script.

    Args:
        argv: Arguments (without the program name); ``None`` reads ``sys.argv``.

    Returns:
        0 on success.

    Raises:
        SystemExit: With status 2 on a usage error (message on stderr).
    """
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    _one_blas_thread()
    if extras:
        owner = getattr(args, "parser", parser)
        (owner if isinstance(owner, _Parser) else parser).unknown(extras)
    try:
        status: int = args.handler(args, args.parser)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (`bam-rl list | head`): stop quietly, as Unix tools do; point
        # stdout at devnull so the interpreter's final flush does not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 1
    return status
