"""``bam-rl bench``: the performance table against peers (:mod:`bam_rl.bench`)."""

from __future__ import annotations

import argparse
from typing import Any

from bam_rl.cli.common import command, run_writing

#: ``bam-rl bench``'s line in ``bam-rl --help`` and its ``--help`` description.
HELP = "performance table against peers (workload, ours, peer, ratio, bar, met)"
# the package's old path, still importable: the pinned --help stays byte-identical (issue 54)
DESCRIPTION = (
    "Runs the benchmark workloads of bam_rl.harness.bench and prints one "
    "table; peers come from the optional 'bench' extra."
)


def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from bam_rl.bench import run_from_args

    outputs = {"--json": args.json, "--markdown": args.markdown}
    return run_writing(parser, lambda: run_from_args(args), outputs)


def add(commands: Any) -> None:
    """The ``bench`` command's parser: its arguments and handler."""
    from bam_rl.bench import add_arguments as add_bench_arguments

    bench = command(commands, "bench", handle, HELP, DESCRIPTION)
    add_bench_arguments(bench)
