"""``python scripts/mppi_readout_analysis.py ARGS``: ``bam-rl reproduce cartpole-readout ARGS``.

The analysis lives in the package (:mod:`bam_rl.harness.experiments.cartpole_readout`), so it
runs from a wheel too; e.g. ``--seeds 5 --jobs 2 --out DIR``.
"""

import sys

from bam_rl.harness.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["reproduce", "cartpole-readout", *sys.argv[1:]]))
