"""Bounded memory at scale: BAM with ``capacity=256`` on a long ``BinomialStream`` run.

One run of a :class:`~bam_rl.agents.tracking.BeliefTracker` with the BAM rule (Beta-Binomial(1, 1),
``λ = 0``, greedy readout) and a memory bounded at ``--capacity`` records (adding past it merges
the two closest records), through the bare act → step → observe loop (no per-step rows are
kept, so the resident memory measured is the agent's and the environment's). Every block of
steps records the wall time per step and the resident set size (``/proc/self/statm``).

Reported (issue 13, "bounded memory"):

* per-step time flat: mean per-step time over the last 10 % of the steps after the memory
  fills, against the first 10 % after it fills (bar ≤ 1.5×), read on this process's CPU
  time (``time.process_time``) so that other work on the machine does not move it; the wall
  time is printed and plotted too;
* resident memory flat: mean RSS over the same two windows (bar ≤ 1.05×);
* tracking MSE of the posterior mean against ``θ_t`` over the first ``--mse-steps`` steps,
  bounded against unbounded BAM on the same stream (same seed; bar ≤ 1.10×).

The figure (per-step time and RSS against ``t``) is written to ``--out``.

Usage::

    python -m bam_rl.bench.memory [--steps 1000000] [--capacity 256] [--out memory.png]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym
import numpy as np

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents.tracking import BeliefTracker
from bam_rl.beliefs import BAM
from bam_rl.families import BetaBinomial

TIME_BAR = 1.5
RSS_BAR = 1.05
MSE_BAR = 1.10

Row = tuple  # (workload, ours, peer, bar, met)


def rss_bytes() -> int:
    """Resident set size of this process (Linux ``/proc``; 0 where unavailable)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        return 0


def tracker(capacity: int | None, n_trials: int) -> BeliefTracker:
    return BeliefTracker(
        BAM(BetaBinomial(1.0, 1.0), lam=0.0, capacity=capacity), n_trials=n_trials, seed=0
    )


def run_stream(
    steps: int,
    capacity: int | None,
    seed: int = 0,
    block: int = 1000,
    mse_steps: int = 10_000,
    progress: bool = False,
) -> dict[str, Any]:
    """Runs the tracker for ``steps`` steps; per block: end step, seconds per step, RSS."""
    env = gym.make("bam_rl/BinomialStream-v0", max_steps=steps).unwrapped
    agent = tracker(capacity, int(getattr(env, "n")))  # noqa: B009
    rule = agent.rule
    assert isinstance(rule, BAM)
    act, observe, step = agent.act, agent.observe, env.step
    observation, info = env.reset(seed=seed)
    agent.reset(observation, info)
    errors = np.zeros(min(mse_steps, steps))
    ends, per_step, cpu_per_step, rss = [], [], [], []
    filled_at = None
    clock, cpu_clock = time.perf_counter, time.process_time
    t = 0
    start_all = clock()
    while t < steps:
        n = min(block, steps - t)
        start, cpu_start = clock(), cpu_clock()
        for _ in range(n):
            action = act(observation)
            observation, reward, terminated, truncated, info = step(action)
            observe(action, float(reward), observation, terminated, truncated, info)
            if t < errors.size:
                errors[t] = (agent.mean - info["theta"]) ** 2
            t += 1
        per_step.append((clock() - start) / n)
        cpu_per_step.append((cpu_clock() - cpu_start) / n)
        ends.append(t)
        rss.append(rss_bytes())
        if filled_at is None and capacity is not None and len(rule.memory) >= capacity:
            filled_at = t
        if progress and len(ends) % 50 == 0:
            print(
                f"  t={t:>8}  {per_step[-1] * 1e3:.3f} ms/step  RSS {rss[-1] / 2**20:.1f} MiB"
                f"  ({clock() - start_all:.0f} s)",
                flush=True,
            )
    env.close()
    return {
        "t": np.array(ends),
        "seconds_per_step": np.array(per_step),
        "cpu_per_step": np.array(cpu_per_step),
        "rss": np.array(rss, dtype=np.float64),
        "mse": float(errors.mean()),
        "filled_at": filled_at,
        "memory": len(rule.memory),
        "wall": clock() - start_all,
    }


def windows(result: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Masks of the blocks in the first and last 10 % of the steps after the memory fills."""
    t = result["t"]
    filled = result["filled_at"] or 0
    span = t[-1] - filled
    first = (t > filled) & (t <= filled + max(0.1 * span, 1))
    last = t > t[-1] - max(0.1 * span, 1)
    if not first.any():  # fewer blocks than windows: the first and last blocks after filling
        first = t == t[t > filled][0]
    return first, last


def figure(result: dict[str, Any], path: str, capacity: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    top.plot(result["t"], result["seconds_per_step"] * 1e3, lw=0.6, alpha=0.6, label="wall")
    top.plot(result["t"], result["cpu_per_step"] * 1e3, lw=0.8, label="CPU (process)")
    top.set_ylabel("ms per step")
    top.legend(fontsize=8)
    top.set_title(f"BAM on BinomialStream, capacity={capacity}")
    bottom.plot(result["t"], result["rss"] / 2**20, lw=0.8, color="C1")
    bottom.set_ylabel("RSS (MiB)")
    bottom.set_xlabel("step t")
    if result["filled_at"]:
        for axis in (top, bottom):
            axis.axvline(result["filled_at"], color="grey", lw=0.5, ls="--")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def memory_rows(
    steps: int = 1_000_000,
    capacity: int = 256,
    mse_steps: int = 10_000,
    out: str | None = None,
    block: int = 1000,
    progress: bool = False,
) -> list[Row]:
    """The bench rows: per-step time flatness, RSS flatness, tracking MSE ratio."""
    bounded = run_stream(steps, capacity, block=block, mse_steps=mse_steps, progress=progress)
    unbounded = run_stream(min(mse_steps, steps), None, block=block, mse_steps=mse_steps)
    first, last = windows(bounded)
    # the bar is read on CPU time per step (this process's), which other load on the machine
    # barely changes; wall time is printed alongside
    time_first = float(bounded["cpu_per_step"][first].mean())
    time_last = float(bounded["cpu_per_step"][last].mean())
    wall_first = float(bounded["seconds_per_step"][first].mean())
    wall_last = float(bounded["seconds_per_step"][last].mean())
    rss_first = float(bounded["rss"][first].mean())
    rss_last = float(bounded["rss"][last].mean())
    print(
        f"  bounded run: {steps} steps in {bounded['wall']:.0f} s, memory filled at step "
        f"{bounded['filled_at']}, {bounded['memory']} records at the end"
    )
    print(
        f"  per-step CPU time: first 10 % after filling {time_first * 1e3:.3f} ms, last 10 % "
        f"{time_last * 1e3:.3f} ms (ratio {time_last / time_first:.2f}); wall "
        f"{wall_first * 1e3:.3f} → {wall_last * 1e3:.3f} ms"
    )
    print(f"  RSS: first 10 % {rss_first / 2**20:.1f} MiB, last 10 % {rss_last / 2**20:.1f} MiB")
    n_mse = min(mse_steps, steps)
    print(
        f"  tracking MSE, first {n_mse} steps: bounded {bounded['mse']:.5f}, unbounded "
        f"{unbounded['mse']:.5f}"
    )
    if out:
        figure(bounded, out, capacity)
        print(f"  figure: {out}")
    label = f"BAM capacity={capacity}, BinomialStream {steps} steps"
    # ours = last window, peer = first window: ratio = first / last (≥ 1/bar is flat enough)
    return [
        (
            f"{label}: CPU s/step, last 10 % (peer: first 10 % after filling)",
            time_last,
            time_first,
            f"ours ≤ {TIME_BAR:g}× peer",
            time_last <= TIME_BAR * time_first,
        ),
        (
            f"{label}: RSS MiB, last 10 % (peer: first 10 %)",
            rss_last / 2**20,
            rss_first / 2**20,
            f"ours ≤ {RSS_BAR:g}× peer",
            rss_last <= RSS_BAR * rss_first,
        ),
        (
            f"BAM capacity={capacity} tracking MSE, first {n_mse} steps (peer: unbounded BAM)",
            bounded["mse"],
            unbounded["mse"],
            f"ours ≤ {MSE_BAR:g}× peer",
            bounded["mse"] <= MSE_BAR * unbounded["mse"],
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--capacity", type=int, default=256)
    parser.add_argument("--mse-steps", type=int, default=10_000)
    parser.add_argument("--block", type=int, default=1000, help="steps per timing block")
    parser.add_argument("--out", default="benchmark_memory.png", help="figure path")
    args = parser.parse_args()
    print(
        f"# {platform.machine()}, Python {platform.python_version()}, load "
        f"{os.getloadavg()[0]:.2f} at start"
    )
    rows = memory_rows(
        args.steps, args.capacity, args.mse_steps, args.out, args.block, progress=True
    )
    print(f"# load {os.getloadavg()[0]:.2f} at end")
    for name, ours, peer, bar, met in rows:
        print(f"{name}: ours {ours:.4g}, peer {peer:.4g}, bar {bar}, {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
