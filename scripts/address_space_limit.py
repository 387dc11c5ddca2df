"""``python scripts/address_space_limit.py [options]``: runs
:mod:`bam_rl.harness.drills.address_space`.

The check lives in the package (``bam-rl drill address-space``), so it runs from a
wheel too.
"""

from bam_rl.harness.drills.address_space import main

if __name__ == "__main__":
    raise SystemExit(main())
