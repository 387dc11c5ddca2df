"""``python -m bam_rl.cli``: the ``bam-rl`` command line (as ``python -m bam_rl``)."""

from bam_rl.cli import main

raise SystemExit(main())
