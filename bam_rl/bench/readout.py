"""Performance of the core, as ratios against peers run side by side on the same work.

Rows: (workload, ours, peer, ratio = peer time / our time; > 1 means we are faster).

* Readout selection against memory size: our batched greedy selector versus the paper's
  Algorithm 1 executed loop by loop (one family call per candidate, as the pseudo-code
  reads). Both return the same weights (checked here).
* BOCD per-step cost on long Normal streams against the published ``bocd`` package
  (``pip install bocd==0.1.2``; Normal-Gamma model, unpruned, O(t) per step). That package's
  β update adds to κ instead of β, so its run-length posteriors differ from the correct ones;
  the work per step (one Student-t predictive per run length) is the same.
* Environment steps: see :mod:`bam_rl.bench.envs`; agents and harness:
  :mod:`bam_rl.bench.agents` and :mod:`bam_rl.bench.loop`.

* Fast readout (issue 13): greedy over one-point Normal records (fast path vs the generic
  loop, ``select(..., fast=False)``), its time against memory size with the fitted growth
  exponent, ``thompson-bam`` on the switching bandit, and Bayesian-linear-regression greedy
  (the MPPI model and the rotated-MNIST model) against Algorithm 1 loop by loop with the
  family's plain ``A(η + s) − A(η)`` evidence. Rows print (workload, ours, peer, ratio, bar,
  met).

Its row functions are the groups ``fast`` (default), ``readout`` and ``bocd-pkg`` (on request)
of ``bam-rl bench`` (:mod:`bam_rl.bench`); run alone, this module prints that table.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from functools import partial

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from bam_rl.bench.timing import best_time
from bam_rl.bocd import ChangepointDetector
from bam_rl.families import (
    BayesianLinearRegression,
    BetaBinomial,
    NormalGamma,
    NormalKnownVariance,
)
from bam_rl.families.base import ConjugateFamily
from bam_rl.memory import Memory
from bam_rl.readout import FactorCache, select


def literal_greedy(model, memory, s_t):
    """Algorithm 1 as written (with the unselected-item fix): one call per candidate, each
    the plain ``A(η + s) − A(η) + log h`` of the family (the straightforward evidence)."""
    evidence = lambda belief: ConjugateFamily.log_marginal(model, belief, s_t)  # noqa: E731
    items = list(memory)
    chosen = np.zeros(len(items))
    belief = model.prior
    best = evidence(belief)
    while not chosen.all():
        scores = np.full(len(items), -np.inf)
        for i, s in enumerate(items):
            if not chosen[i]:
                scores[i] = evidence(belief + s)
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
        rows.append(
            (
                f"greedy readout, Beta-Binomial, m={size}",
                best_time(partial(select, model, memory, s_t)),
                best_time(partial(literal_greedy, model, memory, s_t), 1),
            )
        )
    blr = BayesianLinearRegression(dim_in=200, dim_out=4, prior_precision=1.0, noise_var=0.1)
    truths = [rng.normal(size=(4, 200)) * 0.1 for _ in range(3)]
    memory = Memory()
    for j in range(20 if quick else 100):
        x = rng.normal(size=(200, 200))
        memory.add(blr.stats(x, x @ truths[j % 3].T + rng.normal(0, 0.3, (200, 4))))
    x = rng.normal(size=(200, 200))
    s_t = blr.stats(x, x @ truths[0].T + rng.normal(0, 0.3, (200, 4)))
    rows.append(
        (
            f"greedy readout, BLR 200x4, m={len(memory)}",
            best_time(lambda: select(blr, memory, s_t), 1),
            best_time(lambda: literal_greedy(blr, memory, s_t), 1),
        )
    )
    return rows


Row = tuple  # (workload, ours, peer, bar, met): bar and met may be None


def median_time(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def normal_memory(size: int, rng: np.random.Generator, spread: float = 0.25):
    model = NormalKnownVariance(0.5, 0.25, 0.0625)
    memory = Memory()
    for y in rng.normal(0.5, spread, size):
        memory.add(model.stats([y]))
    return model, memory


def fast_readout_rows(quick: bool) -> list[Row]:
    rows: list[Row] = []
    rng = np.random.default_rng(2)
    # 1,000 one-point Normal records; a datum far from them (few kept) and one among them
    for label, v in (("few kept", 3.0), ("hundreds kept", 0.5)):
        model, memory = normal_memory(1000, rng)
        s_t = model.stats([v])
        fast = select(model, memory, s_t)
        slow = select(model, memory, s_t, fast=False)
        assert np.array_equal(fast.weights, slow.weights) and fast.path == "gaussian"
        ours = median_time(lambda m=memory, s=s_t, mo=model: select(mo, m, s), 21)
        peer = median_time(
            lambda m=memory, s=s_t, mo=model: select(mo, m, s, fast=False), 1 if quick else 3
        )
        rows.append(
            (
                f"greedy, 1000 one-point Normal records, {label} ({int(fast.weights.sum())})",
                ours,
                peer,
                5e-3,
                ours <= 5e-3,
            )
        )
    # time against memory size, fitted exponent
    sizes = (10, 100, 1000) if quick else (10, 100, 1000, 10000)
    times = []
    for size in sizes:
        model, memory = normal_memory(size, rng)
        s_t = model.stats([0.5])
        times.append(median_time(lambda m=memory, s=s_t, mo=model: select(mo, m, s), 7))
        kept = int(select(model, memory, s_t).weights.sum())
        print(f"  one-point Normal greedy: m={size:>6}  kept={kept:>5}  median {times[-1]:.2e} s")
    slope = np.polyfit(np.log(sizes), np.log(times), 1)[0]
    print(f"  fitted growth exponent (time ~ m^k): k = {slope:.2f}")
    rows.append(
        (
            f"greedy vs memory size {sizes[0]}..{sizes[-1]}: exponent {slope:.2f}",
            times[-1],
            float("nan"),
            None,
            None,
        )
    )
    rows += thompson_rows(quick)
    rows += regression_rows(quick)
    return rows


def thompson_rows(quick: bool) -> list[Row]:
    steps = 2000 if quick else 10000
    command = [
        sys.executable,
        "-m",
        "bam_rl",
        "run",
        "--env",
        "bam_rl/SwitchingBandit-v0",
        "--agent",
        "thompson-bam",
        "--steps",
        str(steps),
        "--seeds",
        "1",
    ]
    # a short run first: Numba's cache is warm (compiled once per machine, then loaded)
    subprocess.run([*command[:-3], "50", *command[-2:]], capture_output=True, check=False)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return [(f"thompson-bam {steps} steps: FAILED", float("nan"), float("nan"), None, None)]
    print(
        f"  thompson-bam {steps} steps: {seconds:.1f} s wall, {cpu:.1f} s CPU "
        f"(load {os.getloadavg()[0]:.2f})"
    )
    bar = 4.0 if not quick else None  # issue 23: wall with start-up, Numba cache warm
    return [
        (
            f"`bam-rl run` thompson-bam, SwitchingBandit, {steps} steps, wall with start-up "
            f"(CPU {cpu:.1f} s; peer: issue 13's 470 s)",
            seconds,
            470.0 * steps / 10000,
            bar,
            None if bar is None else seconds <= bar,
        )
    ]


def regression_case(
    rng, dim_in, dim_out, n_records, rows, new_rows, prior_precision, noise_var, features
):
    model = BayesianLinearRegression(
        dim_in, dim_out, prior_precision=prior_precision, noise_var=noise_var
    )
    truths = [rng.normal(size=(dim_out, dim_in)) * 0.3 for _ in range(3)]

    def datum(j, n):
        x = features(n)
        y = x @ truths[j % 3].T + np.sqrt(noise_var) * rng.normal(size=(n, dim_out))
        return model.stats(x, y)

    memory = Memory()
    for j in range(n_records):
        memory.add(datum(j, rows))
    return model, memory, datum(0, new_rows)


def rff_features(rng, dim_in, state_dim=5, bandwidth=6.0):
    """Random Fourier features of states along a short trajectory (the MPPI model)."""
    omega = rng.normal(size=(state_dim, dim_in)) / bandwidth
    phase = rng.uniform(0, 2 * np.pi, dim_in)

    def features(n):
        states = np.cumsum(rng.normal(0, 0.3, size=(n, state_dim)), axis=0)
        return np.sqrt(2.0 / dim_in) * np.cos(states @ omega + phase)

    return features


def pixel_features(rng, dim_in):
    """MNIST-like inputs: 784 'pixels' in [0, 1] with dead borders, plus a bias column."""
    side = round(float(np.sqrt(dim_in - 1)))
    alive = np.zeros((side, side), dtype=bool)
    alive[4:-4, 4:-4] = True

    def features(n):
        x = np.zeros((n, side * side))
        x[:, alive.ravel()] = np.clip(rng.normal(0.2, 0.35, size=(n, int(alive.sum()))), 0, 1)
        return np.hstack([x, np.ones((n, 1))])

    return features


def regression_rows(quick: bool) -> list[Row]:
    rows: list[Row] = []
    rng = np.random.default_rng(3)
    # the MPPI dynamics model: 200 RFF features, 4 outputs, σ² = 1e-6, Λ0 = 1e-4 I
    sizes = (10, 30) if quick else (10, 30, 90, 300)
    features = rff_features(rng, 200)
    for n_records in sizes:
        model, memory, s_t = regression_case(rng, 200, 4, n_records, 200, 200, 1e-4, 1e-6, features)
        start = time.perf_counter()
        fast = select(model, memory, s_t)
        ours = time.perf_counter() - start
        line = (
            f"  BLR 200x4 greedy (MPPI model): m={n_records:>4}  {ours:.2f} s  "
            f"rounds={len(fast.scores)} kept={int(fast.weights.sum())} path={fast.path}"
        )
        if n_records == 90 or (quick and n_records == sizes[-1]):
            start = time.perf_counter()
            literal = literal_greedy(model, memory, s_t)
            peer = time.perf_counter() - start
            same = np.array_equal(literal, fast.weights)
            rows.append(
                (
                    f"greedy BLR 200x4, m={n_records} x 200 rows (MPPI model, "
                    f"same readout: {same})",
                    ours,
                    peer,
                    "ours ≤ 1 s, ratio ≥ 3",
                    ours <= 1.0 and peer / ours >= 3.0,
                )
            )
            line += f"  literal Alg. 1 {peer:.2f} s"
        print(line)
    # rotated MNIST: d_in 785, d_out 10, Λ0 = 0.1 I, 32 records of 1,875 rows, D_t of 10 rows
    features = pixel_features(rng, 785)
    for noise_var in (1e-4, 1e-2, 1.0) if not quick else (1e-2,):
        n_records = 8 if quick else 32
        model, memory, s_t = regression_case(
            rng, 785, 10, n_records, 1875, 10, 0.1, noise_var, features
        )
        start = time.perf_counter()
        fast = select(model, memory, s_t)
        ours = time.perf_counter() - start
        peer = float("nan")
        if noise_var == 1e-2 or quick:
            start = time.perf_counter()
            literal = literal_greedy(model, memory, s_t)
            peer = time.perf_counter() - start
            print(
                f"  MNIST literal Alg. 1 (plain evidence) same readout: "
                f"{np.array_equal(literal, fast.weights)}"
            )
        rows.append(
            (
                f"greedy BLR 785x10, m={n_records} x 1875 rows, D_t 10 rows, "
                f"σ²={noise_var:g} (rounds {len(fast.scores)})",
                ours,
                peer,
                1.0,
                ours <= 1.0,
            )
        )
        # many selections over one memory (the experiment's inner loop) with a FactorCache
        cache = FactorCache()
        times = []
        for trial in range(2 if quick else 6):
            _, _, other = regression_case(
                np.random.default_rng(100 + trial), 785, 10, 0, 1875, 10, 0.1, noise_var, features
            )
            start = time.perf_counter()
            cached = select(model, memory, other, cache=cache)
            times.append(time.perf_counter() - start)
        assert np.array_equal(cached.weights, select(model, memory, other).weights)
        later = statistics.median(times[1:])
        rows.append(
            (
                f"  same, new D_t each call, FactorCache (median of calls 2..; first "
                f"{times[0]:.2f} s, hits {cache.hits})",
                later,
                ours,
                1.0,
                later <= 1.0,
            )
        )
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
            detector = BayesianOnlineChangePointDetection(
                ConstantHazard(250), StudentT(0.0, 1.0, 1.0, 1.0)
            )
            for x in data:
                detector.update(x)

        peer_time = best_time(peer, 1)
        rows.append(
            (
                f"BOCD unpruned, {steps} steps (per step)",
                best_time(lambda: ours(0.0), 1) / steps,
                peer_time / steps,
            )
        )
        rows.append(
            (
                f"BOCD pruned 1e-10, {steps} steps (per step)",
                best_time(lambda: ours(1e-10), 1) / steps,
                peer_time / steps,
            )
        )
    return rows


def main() -> None:
    """The bench table (``bam_rl.bench``; the same as ``bam-rl bench``)."""
    from bam_rl.bench import main as bench_main

    raise SystemExit(bench_main())


if __name__ == "__main__":
    main()
