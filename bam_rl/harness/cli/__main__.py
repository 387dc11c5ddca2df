"""``python -m bam_rl.harness.cli``: the ``bam-rl`` command line (as ``python -m bam_rl``)."""

from bam_rl.harness.cli import main

raise SystemExit(main())
