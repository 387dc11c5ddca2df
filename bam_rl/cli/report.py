"""``bam-rl report DIR``: one report (``report.html`` and ``report.md``) of a results directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from bam_rl.cli.common import command

#: ``bam-rl report``'s line in ``bam-rl --help`` and its ``--help`` description.
HELP = "one report (report.html + report.md) of a results directory"
DESCRIPTION = (
    "Writes DIR/report.html (self-contained: figures embedded) and its Markdown "
    "twin DIR/report.md from the experiment folders in DIR: every figure, the "
    "table of the paper's claims with the measured numbers, wall times, "
    "commands, package versions and the machine."
)


def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from bam_rl.experiments.report import build_report

    directory = Path(args.directory)
    if not directory.exists():
        parser.error(
            f"results directory {args.directory!r} does not exist "
            "(run `bam-rl reproduce ... --out DIR` first)"
        )
    if not directory.is_dir():
        parser.error(f"results directory {args.directory!r} is a file, not a folder")
    try:
        html_path, md_path = build_report(
            directory, lambda line: print(f"bam-rl report: {line}", file=sys.stderr)
        )
    except ValueError as error:
        parser.error(str(error))
    print(f"{html_path.resolve()}\n{md_path.resolve()}")
    return 0


def add(commands: Any) -> None:
    """The ``report`` command's parser: its arguments and handler."""
    report = command(commands, "report", handle, HELP, DESCRIPTION)
    report.add_argument("directory", metavar="DIR", help="results directory (of reproduce)")
