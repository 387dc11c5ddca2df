"""``python scripts/address_space_limit.py [options]``: runs
:mod:`bam_rl.harness.bench.address_space`.

The check lives in the package (``bam-rl bench --only address-space``), so it runs from a
wheel too.
"""

from bam_rl.harness.bench.address_space import main

if __name__ == "__main__":
    raise SystemExit(main())
