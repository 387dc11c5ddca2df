"""Rotated MNIST (paper §4.4) at full scale: wall time against the 180 s target, and a profile.

Runs ``bam_rl.experiments.mnist.reproduce`` (10 seeds × 8 test domains, greedy over
32 training domains, every method) and prints the summary, the wall time and the selection
time per test domain and method. ``--profile`` instead runs one seed serially under
``cProfile`` and prints the functions with the largest cumulative time.

Usage::

    python -m bam_rl.bench.mnist --data ../shared/data/mnist [--side 28] [--seeds 10]
        [--jobs 2] [--out results] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import time

TARGET_SECONDS = 180.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--data", default=None, help="MNIST directory ($BAM_RL_MNIST)")
    parser.add_argument("--side", type=int, default=28, choices=(28, 14))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default="results/mnist")
    parser.add_argument("--profile", action="store_true", help="profile one seed")
    args = parser.parse_args()
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")

    import pandas as pd

    from bam_rl.datasets import load_mnist
    from bam_rl.experiments.mnist import reproduce, run_seed

    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, side {args.side}")
    if args.profile:
        data = load_mnist(args.data)
        profile = cProfile.Profile()
        start, cpu = time.perf_counter(), time.process_time()
        profile.enable()
        frame = run_seed(0, data, side=args.side)
        profile.disable()
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(
            f"one seed, serial: {wall:.1f} s wall, {cpu:.1f} s CPU; "
            f"{args.seeds} seeds on {args.jobs} workers ≈ {args.seeds * cpu / args.jobs:.0f} s"
        )
        print(frame.groupby("method")["seconds"].sum().round(2).to_string())
        pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
        return
    start = time.perf_counter()
    summary = reproduce(
        args.out, seeds=args.seeds, n_jobs=args.jobs, data=args.data, side=args.side
    )
    wall = time.perf_counter() - start
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(summary.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    frame = pd.read_csv(f"{args.out}/mnist.csv")
    seeds = frame.groupby("seed")[["seed_seconds", "seed_cpu_seconds"]].first()
    cpu = seeds["seed_cpu_seconds"].sum()
    print(
        f"\nper seed: {seeds['seed_seconds'].mean():.1f} s wall, "
        f"{seeds['seed_cpu_seconds'].mean():.1f} s CPU; total CPU {cpu:.0f} s "
        f"(≈ {cpu / args.jobs:.0f} s on {args.jobs} idle cores)"
    )
    print("readout + posterior per test domain (s):")
    print(frame.groupby("method")["seconds"].mean().round(3).to_string())
    status = "meets" if wall <= TARGET_SECONDS else "MISSES"
    print(
        f"\nwall time {wall:.1f} s for {args.seeds} seeds with {args.jobs} workers "
        f"({status} the {TARGET_SECONDS:.0f} s target)"
    )


if __name__ == "__main__":
    main()
