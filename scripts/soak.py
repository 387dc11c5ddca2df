"""``python scripts/soak.py [options]``: runs :mod:`bam_rl.harness.drills.soak`.

The workload lives in the package (``bam-rl drill``), so it runs from a wheel too.
"""

from bam_rl.harness.drills.soak import main

if __name__ == "__main__":
    raise SystemExit(main())
