"""``python scripts/bocd_cap_check.py [options]``: runs :mod:`bam_rl.harness.drills.bocd_cap`.

The check lives in the package (``bam-rl drill bocd-cap``), so it runs from a wheel too.
"""

from bam_rl.harness.drills.bocd_cap import main

if __name__ == "__main__":
    raise SystemExit(main())
