"""``python scripts/benchmark_harness.py [options]``: runs :mod:`bam_rl.harness.bench.loop`.

The workload lives in the package, so ``bam-rl bench`` runs it from an installed wheel too.
"""

from bam_rl.harness.bench.loop import main

if __name__ == "__main__":
    raise SystemExit(main())
