"""``python scripts/shared_sweep_check.py [options]``: runs
:mod:`bam_rl.harness.drills.shared_sweeps`.

The check lives in the package (``bam-rl drill shared-sweeps``), so it runs from a
wheel too.
"""

from bam_rl.harness.drills.shared_sweeps import main

if __name__ == "__main__":
    raise SystemExit(main())
