"""BOCD throughput against peers: a Normal stream, the Normal-Gamma model, hazard 1/100.

Every detector keeps run lengths ``0 … 200`` (201 entries) and is fed the same ``--steps``
observations (Normal, piecewise-constant mean, a change every ~100 steps):

* ours: :class:`bam_rl.bocd.ChangepointDetector` (``NormalGamma(0, 1, 1, 1)``, hazard 1/100,
  ``max_run_length=200``, ``prune_threshold=0``: only the cap prunes), and the same with
  mass-threshold pruning (``1e-10``) on top of the cap;
* ``bayesian-changepoint`` (hildensia's ``bayesian_changepoint_detection``, PyTorch):
  ``OnlineChangepointDetector(partial(constant_hazard, 100), StudentT(alpha=1, beta=1,
  kappa=1, mu=0), max_run_length=200)`` — the same recursion and run-length convention as
  ours (``r = 0`` holds the prior), in float32 on the CPU with one thread;
* ``fast-bocpd`` (C backend): ``BOCPD(GaussianNIG(0, 1, 1, 1), ConstantHazard(100),
  max_run_length=200)`` fed one ``update(x)`` at a time (its ``batch_update`` is reported
  too). Its run length ``r`` counts the observations of the current segment minus one (the
  change happens *before* ``x_t``), so its entry ``r`` is our ``r + 1`` divided by ``1 − H``;
  its first step keeps the initial segment twice (entries ``t − 1`` and ``t``), which sum to
  ours.

Correctness: over the first ``--prefix`` steps (fewer than the cap, so no detector has
dropped anything yet) every run-length posterior is compared with the unpruned, uncapped
reference (ours with ``prune_threshold=0``, ``max_run_length=None``): ours capped and ours
pruned to 1e-6 (bar), the peers reported.

Times are CPU seconds of this process over the whole stream (wall printed alongside): every
detector runs on one thread, and CPU time is what other work on a loaded machine moves least.
Throughput bars: ≥ 30× ``bayesian-changepoint`` (issue 13); ≥ 1.5× ``fast-bocpd``'s
per-observation ``update`` loop with ours, and ≥ 1.5× its ``batch_update`` with our batch
``run()`` (issue 50: the step checks each datum in its own compiled pass). A missing peer is
reported, not a failure. ``scripts/performance/bench_against_commit.py`` times the same updates
against an old commit's code side by side.

Usage: ``python -m bam_rl.bench.bocd [--steps 100000] [--prefix 150]``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from bam_rl.bocd import ChangepointDetector
from bam_rl.families import NormalGamma

HAZARD = 1 / 100
CAP = 200
PRIOR = {"mean": 0.0, "kappa": 1.0, "alpha": 1.0, "beta": 1.0}
Row = tuple  # (workload, ours, peer, bar, met)


def _clock() -> np.ndarray:
    """(wall, CPU) clocks; the rows use CPU seconds of this process, which other work on a
    loaded machine barely moves (every detector here runs on one thread)."""
    return np.array([time.perf_counter(), time.process_time()])


def stream(steps: int, seed: int = 0) -> np.ndarray:
    """A Normal stream whose mean jumps every Geometric(1/100) steps."""
    rng = np.random.default_rng(seed)
    out = np.empty(steps)
    t = 0
    while t < steps:
        length = int(rng.geometric(HAZARD))
        out[t : t + length] = rng.normal(rng.normal(0.0, 3.0), rng.uniform(0.5, 2.0), 1)[0]
        t += length
    return out + rng.normal(0.0, 1.0, steps)


def ours(
    data: np.ndarray, threshold: float, cap: int | None, record: int = 0
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Seconds for our detector over ``data`` (statistics prepared outside the timing) and
    the first ``record`` run-length posteriors."""
    model = NormalGamma(**PRIOR)
    stats = model.stats(data, axis=())
    items = [stats[i] for i in range(data.size)]
    detector = ChangepointDetector(
        model, hazard=HAZARD, prune_threshold=threshold, max_run_length=cap
    )
    posteriors = []
    update = detector.update
    start = _clock()
    for i, s in enumerate(items):
        update(s)
        if i < record:
            posteriors.append(detector.run_length_posterior.copy())
    return _clock() - start, posteriors


def ours_batch(data: np.ndarray, cap: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Seconds for our detector's compiled batch ``run`` over ``data`` (statistics prepared
    outside the timing, Numba's compilation warmed up first), and the MAP run lengths."""
    model = NormalGamma(**PRIOR)
    ChangepointDetector(model, hazard=HAZARD, max_run_length=cap).run(
        model.stats(data[:50], axis=())
    )  # compiles (or loads the cached machine code) outside the timing
    stats = model.stats(data, axis=())
    detector = ChangepointDetector(model, hazard=HAZARD, prune_threshold=0.0, max_run_length=cap)
    start = _clock()
    maps, _ = detector.run(stats)
    return _clock() - start, maps


def hildensia(data: np.ndarray, record: int = 0) -> tuple[np.ndarray, list[np.ndarray]] | None:
    try:
        import torch
        from bayesian_changepoint_detection import (
            OnlineChangepointDetector,
            StudentT,
            constant_hazard,
        )
    except ImportError:
        return None
    from functools import partial

    torch.set_num_threads(1)
    detector = OnlineChangepointDetector(
        partial(constant_hazard, 1 / HAZARD),
        StudentT(
            alpha=PRIOR["alpha"],
            beta=PRIOR["beta"],
            kappa=PRIOR["kappa"],
            mu=PRIOR["mean"],
            device="cpu",
        ),
        max_run_length=CAP,
        device="cpu",
    )
    values = data.tolist()
    posteriors = []
    start = _clock()
    for i, x in enumerate(values):
        posterior = detector.update(x)
        if i < record:
            posteriors.append(posterior.double().numpy())
    return _clock() - start, posteriors


def _fast_bocpd_detector() -> Any:
    """fast-bocpd's detector with our prior, hazard and cap (``None``: not installed)."""
    try:
        from fast_bocpd import BOCPD, ConstantHazard, GaussianNIG
    except ImportError:
        return None
    return BOCPD(
        GaussianNIG(PRIOR["mean"], PRIOR["kappa"], PRIOR["alpha"], PRIOR["beta"]),
        ConstantHazard(1 / HAZARD),
        max_run_length=CAP,
    )


def fast_bocpd(
    data: np.ndarray, record: int = 0, batch: bool = False
) -> tuple[np.ndarray, list[np.ndarray]] | None:
    detector = _fast_bocpd_detector()
    if detector is None:
        return None
    posteriors: list[np.ndarray] = []
    if batch:
        start = _clock()
        detector.batch_update(data)
        return _clock() - start, posteriors
    values = data.tolist()
    update = detector.update
    start = _clock()
    for i, x in enumerate(values):
        posterior, _ = update(x)
        if i < record:
            posteriors.append(posterior)
    return _clock() - start, posteriors


def map_agreement(data: np.ndarray) -> tuple[int, float, int]:
    """Our compiled batch ``run`` (cap :data:`CAP`) against the exact recursion (no cap, no
    pruning) over ``data``: the steps with the same MAP run length, the largest absolute
    difference of the posteriors over the first :data:`CAP` steps (before any run can reach
    the cap), and the steps with the same MAP among those first :data:`CAP`."""
    model = NormalGamma(**PRIOR)
    stats = model.stats(data, axis=())
    capped = ChangepointDetector(model, hazard=HAZARD, prune_threshold=0.0, max_run_length=CAP)
    exact = ChangepointDetector(model, hazard=HAZARD, prune_threshold=0.0, max_run_length=None)
    same, worst, same_prefix = 0, 0.0, 0
    for i in range(data.size):
        capped.run(stats[i : i + 1])
        exact.update(stats[i])
        equal = capped.map_run_length == exact.map_run_length
        same += equal
        if i < CAP:
            same_prefix += equal
            runs, probabilities = capped.run_length_posterior_sparse
            difference = np.abs(probabilities - exact.run_length_posterior[runs])
            worst = max(worst, float(difference.max()))
    return same, worst, same_prefix


def fast_bocpd_maps(data: np.ndarray) -> np.ndarray | None:
    """fast-bocpd's MAP run length after every observation, in our convention (untimed)."""
    detector = _fast_bocpd_detector()
    if detector is None:
        return None
    maps = np.empty(data.size, dtype=np.int64)
    for t, x in enumerate(data.tolist(), start=1):
        posterior, _ = detector.update(x)
        maps[t - 1] = int(np.argmax(as_ours(posterior, min(t, posterior.size - 1))))
    return maps


def as_ours(posterior: np.ndarray, t: int) -> np.ndarray:
    """fast-bocpd's run-length posterior after ``t`` observations in our convention."""
    segment = posterior[: t + 1].copy()
    segment[t - 1] += segment[t]  # its two copies of the segment that began at the start
    out = np.empty(t + 1)
    out[0] = HAZARD
    out[1:] = (1 - HAZARD) * segment[:t]
    return out


def max_difference(
    posteriors: list[np.ndarray],
    reference: list[np.ndarray],
    convert: Callable[[np.ndarray, int], np.ndarray] | None = None,
) -> float:
    worst = 0.0
    for t, (mine, exact) in enumerate(zip(posteriors, reference, strict=True), start=1):
        mine = convert(mine, t) if convert else mine
        size = max(mine.size, exact.size)
        a = np.zeros(size)
        b = np.zeros(size)
        a[: mine.size] = mine
        b[: exact.size] = exact
        worst = max(worst, float(np.abs(a - b).max()))
    return worst


def _rate(steps: int, seconds: np.ndarray) -> str:
    return f"{steps / seconds[1]:,.0f} obs/s CPU ({steps / seconds[0]:,.0f} wall)"


def bocd_rows(steps: int = 100_000, prefix: int = 150, quick: bool = False) -> list[Row]:
    """Rows (workload, ours, peer, bar, met) in CPU seconds of the whole stream."""
    if quick:
        steps, prefix = min(steps, 3000), min(prefix, 50)
    data = stream(steps)
    print(
        f"  BOCD: {steps} Normal observations, Normal-Gamma{tuple(PRIOR.values())}, hazard "
        f"1/{round(1 / HAZARD)}, run lengths 0..{CAP}; load {os.getloadavg()[0]:.2f}"
    )
    _, reference = ours(data[:prefix], 0.0, None, prefix)
    ours(data[:50], 0.0, CAP)  # Numba's compilation (or its cache) outside the timing
    t_capped, post_capped = ours(data, 0.0, CAP, prefix)
    t_batch, _ = ours_batch(data, CAP)
    print(f"  ours capped, batch run(): {_rate(steps, t_batch)}")
    t_pruned, post_pruned = ours(data, 1e-10, CAP, prefix)
    diff_capped = max_difference(post_capped, reference)
    diff_pruned = max_difference(post_pruned, reference)
    print(
        f"  ours capped: {_rate(steps, t_capped)}, max |Δ| to the unpruned reference over "
        f"the first {prefix} steps {diff_capped:.1e}"
    )
    print(f"  ours capped + pruned 1e-10: {_rate(steps, t_pruned)}, max |Δ| {diff_pruned:.1e}")
    label = f"BOCD {steps} obs, Normal-Gamma, H=1/100, cap {CAP}, CPU s"
    ours_cpu = float(t_capped[1])
    rows: list[Row] = [
        (
            f"{label}: ours capped, posterior max |Δ| vs unpruned ({prefix} steps) "
            f"{diff_capped:.1e}",
            ours_cpu,
            float("nan"),
            "|Δ| ≤ 1e-6",
            diff_capped <= 1e-6,
        ),
        (
            f"{label}: ours capped + pruned 1e-10 (peer: ours capped), max |Δ| {diff_pruned:.1e}",
            float(t_pruned[1]),
            ours_cpu,
            "|Δ| ≤ 1e-6",
            diff_pruned <= 1e-6,
        ),
    ]
    exact = min(steps, 2000)
    same, worst, same_prefix = map_agreement(data[:exact])
    first = min(exact, CAP)
    print(
        f"  against the exact recursion (no cap, no pruning): MAP run length equal at "
        f"{same_prefix} of the first {first} steps (no run reaches the cap), posterior max |Δ| "
        f"there {worst:.1e}; MAP equal at {same:,} of the first {exact:,} steps"
    )
    rows.append(
        (
            f"{label}: vs the exact recursion, first {first} steps: MAP equal at {same_prefix}, "
            f"posterior max |Δ| {worst:.1e}; first {exact:,} steps (the cap's tail row after "
            f"that): MAP equal at {same:,}",
            float(t_batch[1]),
            float("nan"),
            "every step, |Δ| ≤ 1e-8 (before the cap)",
            same_prefix == first and worst <= 1e-8,
        )
    )
    peer = hildensia(data, prefix)
    if peer is None:
        print("  peer bayesian-changepoint not installed (pip install bayesian-changepoint)")
        rows.append(
            (
                f"{label}: vs bayesian-changepoint (NOT INSTALLED)",
                ours_cpu,
                float("nan"),
                "ratio ≥ 20",
                None,
            )
        )
    else:
        seconds, posts = peer
        diff = max_difference(posts, reference)
        print(f"  bayesian-changepoint: {_rate(steps, seconds)}, max |Δ| {diff:.1e} (float32)")
        rows.append(
            (
                f"{label}: ours batch run() vs bayesian-changepoint (float32, max |Δ| {diff:.1e})",
                float(t_batch[1]),
                float(seconds[1]),
                "ratio ≥ 30",
                seconds[1] >= 30 * t_batch[1],
            )
        )
        rows.append(
            (
                f"{label}: ours update() per observation vs bayesian-changepoint",
                ours_cpu,
                float(seconds[1]),
                None,
                None,
            )
        )
    peer = fast_bocpd(data, prefix)
    if peer is None:
        print("  peer fast-bocpd not installed (pip install fast-bocpd)")
        rows.append(
            (f"{label}: vs fast-bocpd (NOT INSTALLED)", ours_cpu, float("nan"), "ratio ≥ 1.5", None)
        )
    else:
        seconds, posts = peer
        diff = max_difference(posts, reference, as_ours)
        batch = fast_bocpd(data, batch=True)
        assert batch is not None
        print(
            f"  fast-bocpd: update loop {_rate(steps, seconds)}, batch_update "
            f"{_rate(steps, batch[0])}, max |Δ| (converted) {diff:.1e}"
        )
        rows.append(
            (
                f"{label}: ours capped vs fast-bocpd update loop (max |Δ| {diff:.1e})",
                ours_cpu,
                float(seconds[1]),
                "ratio ≥ 1.5",
                seconds[1] >= 1.5 * ours_cpu,
            )
        )
        their_maps = fast_bocpd_maps(data)
        assert their_maps is not None
        _, our_maps = ours_batch(data, CAP)
        mine = np.asarray(our_maps)
        below = (mine < CAP) & (their_maps < CAP)
        same = int(np.sum(mine[below] == their_maps[below]))
        print(
            f"  MAP run length equal to fast-bocpd's at {same:,} of the {int(below.sum()):,} "
            f"steps where both are below the cap ({steps:,} steps in all)"
        )
        rows.append(
            (
                f"{label}: MAP run length equal to fast-bocpd's at {same:,} of the "
                f"{int(below.sum()):,} steps with both MAPs below the cap (fast-bocpd truncates "
                f"runs longer than the cap; ours keeps their mass in a tail row)",
                float(t_batch[1]),
                float("nan"),
                None,
                None,
            )
        )
        rows.append(
            (
                f"{label}: ours batch run() vs fast-bocpd batch_update (C loop)",
                float(t_batch[1]),
                float(batch[0][1]),
                "ratio ≥ 1.5",
                batch[0][1] >= 1.5 * t_batch[1],
            )
        )

    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--prefix", type=int, default=150)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    for name, mine, peer, bar, met in bocd_rows(args.steps, args.prefix, args.quick):
        print(
            f"{name}: ours {mine:.3g}, peer {peer:.3g}, ratio {peer / mine:.2f}, bar {bar}, "
            f"{'' if met is None else ('met' if met else 'NOT met')}"
        )


if __name__ == "__main__":
    main()
