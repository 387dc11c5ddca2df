"""``python scripts/fuzz_state_files.py [options]``: runs :mod:`bam_rl.harness.drills.fuzz`.

The check lives in the package (``bam-rl drill fuzz``), so it runs from a wheel too.
"""

from bam_rl.harness.drills.fuzz import main

if __name__ == "__main__":
    raise SystemExit(main())
