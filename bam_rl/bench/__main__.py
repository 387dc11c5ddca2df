"""``python -m bam_rl.bench``: the same table as ``bam-rl bench``."""

from bam_rl.bench import main

raise SystemExit(main())
