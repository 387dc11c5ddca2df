"""``python -m bam_rl``: the ``bam-rl`` command line."""

from bam_rl.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
