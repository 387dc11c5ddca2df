"""``python -m bam_rl.harness.drills``: the same as ``bam-rl drill``."""

from bam_rl.harness.drills import main

raise SystemExit(main())
