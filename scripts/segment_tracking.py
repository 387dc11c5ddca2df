"""``python scripts/segment_tracking.py ARGS``: runs
:mod:`bam_rl.harness.experiments.tracking_segments`.

The check lives in the package, so it runs from a wheel too.
"""

from bam_rl.harness.experiments.tracking_segments import main

if __name__ == "__main__":
    raise SystemExit(main())
