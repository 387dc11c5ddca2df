"""``python scripts/mnist_full.py [options]``: runs :mod:`bam_rl.harness.bench.mnist`.

The workload lives in the package, so ``bam-rl bench`` runs it from an installed wheel too.
"""

from bam_rl.harness.bench.mnist import main

if __name__ == "__main__":
    raise SystemExit(main())
