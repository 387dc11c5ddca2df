"""``python scripts/benchmark_memory.py [options]``: runs :mod:`bam_rl.harness.bench.memory`.

The workload lives in the package, so ``bam-rl bench`` runs it from an installed wheel too.
"""

from bam_rl.harness.bench.memory import main

if __name__ == "__main__":
    raise SystemExit(main())
