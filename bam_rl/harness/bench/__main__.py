"""``python -m bam_rl.harness.bench``: the same table as ``bam-rl bench``."""

from bam_rl.harness.bench import main

raise SystemExit(main())
