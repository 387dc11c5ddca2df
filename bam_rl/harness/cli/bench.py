"""``bam-rl bench``: the performance table against peers (:mod:`bam_rl.harness.bench`).

Each command module of :mod:`bam_rl.harness.cli` owns its parser (``add``) and its handler
(``handle``).
"""

from __future__ import annotations

import argparse
from typing import Any

from bam_rl.harness.cli.common import output_file


def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from bam_rl.harness.bench import run_from_args

    output_file(parser, "--json", args.json)  # before the workloads run
    output_file(parser, "--markdown", args.markdown)
    try:
        return run_from_args(args)
    except OSError as error:  # e.g. the disk filled up while the workloads ran
        parser.exit(1, f"{parser.prog}: error: {error}\n")


def add(commands: Any) -> None:
    """The ``bench`` command's parser: its arguments and handler."""
    from bam_rl.harness.bench import add_arguments as add_bench_arguments

    bench = commands.add_parser(
        "bench",
        help="performance table against peers (workload, ours, peer, ratio, bar, met)",
        description="Runs the benchmark workloads of bam_rl.harness.bench and prints one "
        "table; peers come from the optional 'bench' extra.",
    )
    add_bench_arguments(bench)
    bench.set_defaults(handler=handle, parser=bench)
