"""``python scripts/mppi_acceptance.py ARGS``: runs :mod:`bam_rl.harness.experiments.mppi_checks`.

The check lives in the package, so it runs from a wheel too.
"""

from bam_rl.harness.experiments.mppi_checks import main

if __name__ == "__main__":
    raise SystemExit(main())
