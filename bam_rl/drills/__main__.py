"""``python -m bam_rl.drills``: the same as ``bam-rl drill``."""

from bam_rl.drills import main

raise SystemExit(main())
