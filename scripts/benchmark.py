"""Performance of the core, as ratios against peers run side by side on the same work.

Rows: (workload, ours, peer, ratio = peer time / our time; > 1 means we are faster).

* Readout selection against memory size: our batched greedy selector versus the paper's
  Algorithm 1 executed loop by loop (one family call per candidate, as the pseudo-code
  reads). Both return the same weights (checked here).
* BOCD per-step cost on long Normal streams against the published ``bocd`` package
  (``pip install bocd==0.1.2``; Normal-Gamma model, unpruned, O(t) per step). That package's
  β update adds to κ instead of β, so its run-length posteriors differ from the correct ones;
  the work per step (one Student-t predictive per run length) is the same.
* Environment steps: see ``scripts/benchmark_envs.py``; agents and harness:
  ``scripts/benchmark_agents.py`` and ``scripts/benchmark_harness.py``.

Usage: ``python scripts/benchmark.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from _bench import best_time

from bam_rl.bocd import ChangepointDetector
from bam_rl.families import BayesianLinearRegression, BetaBinomial, NormalGamma
from bam_rl.memory import Memory
from bam_rl.readout import select


def literal_greedy(model, memory, s_t):
    """Algorithm 1 as written (with the unselected-item fix): one call per candidate."""
    items = list(memory)
    chosen = np.zeros(len(items))
    belief = model.prior
    best = model.log_marginal(belief, s_t)
    while not chosen.all():
        scores = np.full(len(items), -np.inf)
        for i, s in enumerate(items):
            if not chosen[i]:
                scores[i] = model.log_marginal(belief + s, s_t)
        pick = int(np.argmax(scores))
        if not scores[pick] > best:
            break
        best, chosen[pick], belief = scores[pick], 1.0, belief + items[pick]
    return chosen


def readout_rows(quick: bool) -> list[tuple[str, float, float]]:
    rows = []
    rng = np.random.default_rng(0)
    model = BetaBinomial()
    for size in (50, 200) if quick else (50, 200, 800):
        memory = Memory()
        for theta in rng.choice([0.2, 0.5, 0.8], size=size):
            memory.add(model.stats(successes=rng.binomial(15, theta), trials=15))
        s_t = model.stats(successes=3, trials=15)
        ours = select(model, memory, s_t, method="greedy").weights
        np.testing.assert_array_equal(ours, literal_greedy(model, memory, s_t))
        rows.append((f"greedy readout, Beta-Binomial, m={size}",
                     best_time(lambda m=memory, s=s_t: select(model, m, s)),
                     best_time(lambda m=memory, s=s_t: literal_greedy(model, m, s), 1)))
    blr = BayesianLinearRegression(dim_in=200, dim_out=4, prior_precision=1.0, noise_var=0.1)
    truths = [rng.normal(size=(4, 200)) * 0.1 for _ in range(3)]
    memory = Memory()
    for j in range(20 if quick else 100):
        x = rng.normal(size=(200, 200))
        memory.add(blr.stats(x, x @ truths[j % 3].T + rng.normal(0, 0.3, (200, 4))))
    x = rng.normal(size=(200, 200))
    s_t = blr.stats(x, x @ truths[0].T + rng.normal(0, 0.3, (200, 4)))
    rows.append((f"greedy readout, BLR 200x4, m={len(memory)}",
                 best_time(lambda: select(blr, memory, s_t), 1),
                 best_time(lambda: literal_greedy(blr, memory, s_t), 1)))
    return rows


def bocd_rows(quick: bool) -> list[tuple[str, float, float]]:
    try:
        from bocd import BayesianOnlineChangePointDetection, ConstantHazard, StudentT
    except ImportError:
        print("peer `bocd` not installed (pip install bocd==0.1.2): skipping BOCD rows")
        return []
    rows = []
    rng = np.random.default_rng(1)
    for steps in (500, 2000) if quick else (1000, 4000):
        data = np.concatenate([rng.normal(m, 1.0, steps // 4) for m in (0, 3, -2, 1)])
        model = NormalGamma(mean=0.0, kappa=1.0, alpha=1.0, beta=1.0)
        stats = model.stats(data, axis=())
        items = [stats[i] for i in range(len(data))]

        def ours(threshold, items=items, model=model):
            detector = ChangepointDetector(model, hazard=1 / 250, prune_threshold=threshold)
            for s in items:
                detector.update(s)

        def peer(data=data):
            detector = BayesianOnlineChangePointDetection(ConstantHazard(250),
                                                          StudentT(0.0, 1.0, 1.0, 1.0))
            for x in data:
                detector.update(x)

        peer_time = best_time(peer, 1)
        rows.append((f"BOCD unpruned, {steps} steps (per step)",
                     best_time(lambda: ours(0.0), 1) / steps, peer_time / steps))
        rows.append((f"BOCD pruned 1e-10, {steps} steps (per step)",
                     best_time(lambda: ours(1e-10), 1) / steps, peer_time / steps))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller workloads")
    args = parser.parse_args()
    rows = readout_rows(args.quick) + bocd_rows(args.quick)
    width = max(len(name) for name, _, _ in rows)
    print(f"{'workload':<{width}}  {'ours (s)':>10}  {'peer (s)':>10}  {'ratio':>7}")
    for name, ours, peer in rows:
        print(f"{name:<{width}}  {ours:>10.2e}  {peer:>10.2e}  {peer / ours:>7.1f}")


if __name__ == "__main__":
    main()
