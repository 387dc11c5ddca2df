"""``python scripts/interrupt_sweeps.py [options]``: runs :mod:`bam_rl.harness.bench.interrupt`.

The workload lives in the package (a ``bam-rl bench`` group), so it runs from a wheel too.
"""

from bam_rl.harness.bench.interrupt import main

if __name__ == "__main__":
    raise SystemExit(main())
