"""``python scripts/soak.py [options]``: runs :mod:`bam_rl.harness.bench.soak`.

The workload lives in the package (a ``bam-rl bench`` group), so it runs from a wheel too.
"""

from bam_rl.harness.bench.soak import main

if __name__ == "__main__":
    raise SystemExit(main())
