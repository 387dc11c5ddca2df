"""``bam-rl drill``: the reliability drills, pass or fail (:mod:`bam_rl.drills`)."""

from __future__ import annotations

import argparse
from typing import Any

from bam_rl.cli.common import command, run_writing

#: ``bam-rl drill``'s line in ``bam-rl --help`` and its ``--help`` description.
HELP = "reliability drills (soak, interrupted sweeps, fuzz, ...): pass or fail"
# the package's old path, still importable: the pinned --help stays byte-identical (issue 54)
DESCRIPTION = (
    "Runs the reliability drills of bam_rl.harness.drills (minutes each; "
    "--quick: seconds), prints their output and one table of verdicts, and exits 1 when "
    "a drill fails."
)


def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from bam_rl.drills import run_from_args

    return run_writing(parser, lambda: run_from_args(args), {"--json": args.json})


def add(commands: Any) -> None:
    """The ``drill`` command's parser: its arguments and handler."""
    from bam_rl.drills import add_arguments as add_drill_arguments

    drill = command(commands, "drill", handle, HELP, DESCRIPTION)
    add_drill_arguments(drill)
