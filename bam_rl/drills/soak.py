"""Soak test (issue 14): long runs must stay finite, flat in memory and flat in time.

Not part of the test suite (it takes minutes to hours). Workloads:

* the Binomial stream of the tracking experiment (``θ_t = 0.5 + 0.3 sin(2πt / 100)``,
  ``k_t ~ Binomial(15, θ_t)``, Beta-Binomial(1, 1)) through BAM with a bounded memory
  (``--capacity``, 256) and through BOCD with a bounded run length (``--max-run-length``,
  10⁴, the default of :class:`bam_rl.bocd.ChangepointDetector`), ``--stream-steps`` (10⁶) each;
* every bandit agent of :func:`bam_rl.harness.make_agent` (ucb, thompson,
  thompson-forgetting, thompson-bocd, thompson-bam, ucbam) on ``bam_rl/SwitchingBandit-v0``
  for ``--bandit-steps`` (10⁵) steps through the agent protocol (act → step → observe);
  ``--agents thompson-bam:capacity=256`` passes options (a bounded memory is judged on flat
  time as well).

Checked for each workload: every value read back (the rule's mean and variance, each reward,
each agent's arm means and ``summary()``) is finite — counted every step for the stream,
every ``--check-every`` steps for the bandits; the resident set size (``VmRSS`` of
``/proc/self/status``) after the first 20 % of the run against the end ("flat memory":
growth below ``--rss-tolerance-mb``); the CPU time per step (``time.process_time``, so other
work on the machine does not move it) over the second tenth of the run against the last tenth
("flat time": ratio at most ``--time-tolerance``, 1.5). Flat time is required of the bounded
workloads only (the two stream rules, and ``ucb``, ``thompson``, ``thompson-forgetting``, whose
per-step cost does not grow with the data): an unbounded BAM agent (``thompson-bam``, ``ucbam``, as
in the paper) reads out over a memory that grows with every pull, and a BOCD agent's run-length
posterior grows until ``max_run_length``, so their ratios are printed, not judged.

Prints one line per workload and a final summary line ``soak: PASS|FAIL ...``; exits 1 on
FAIL.

Usage::

    python -m bam_rl.drills.soak        # the full soak (timings: docs/reliability.md)
    python -m bam_rl.drills.soak --stream-steps 100000 --bandit-steps 20000  # a fraction
    bam-rl drill soak                          # that fraction, with its verdict as one row
"""

from __future__ import annotations

import argparse
import ast
import math
import os
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium
import numpy as np
from tqdm import tqdm

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.beliefs import BAM, BOCD, BeliefRule
from bam_rl.families import BetaBinomial
from bam_rl.harness import make_agent
from bam_rl.harness.argtypes import positive_int

BANDIT_AGENTS = ("ucb", "thompson", "thompson-forgetting", "thompson-bocd", "thompson-bam", "ucbam")
#: agents whose per-step cost does not grow with the data seen (the others are judged on
#: finiteness and memory only; see the module docstring)
BOUNDED_AGENTS = ("ucb", "thompson", "thompson-forgetting")


def rss_mb() -> float:
    """Current resident set size in MB (``VmRSS``), or the peak from ``resource`` elsewhere."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


@dataclass
class Outcome:
    name: str
    steps: int
    seconds: float
    non_finite: int
    early_us: float  # µs per step over the second tenth of the run
    late_us: float  # µs per step over the last tenth
    rss_early_mb: float  # after 20 % of the run
    rss_end_mb: float
    warnings: int
    bounded: bool = True  # whether flat time per step is required

    def time_ratio(self) -> float:
        return self.late_us / self.early_us if self.early_us > 0 else math.inf

    def rss_growth(self) -> float:
        return self.rss_end_mb - self.rss_early_mb

    def line(self) -> str:
        return (
            f"{self.name}: {self.steps} steps in {self.seconds:.0f} s, "
            f"{self.non_finite} non-finite, {self.early_us:.0f}->{self.late_us:.0f} us/step "
            f"CPU (x{self.time_ratio():.2f}{'' if self.bounded else ', not judged'}), "
            f"RSS {self.rss_early_mb:.0f}->"
            f"{self.rss_end_mb:.0f} MB ({self.rss_growth():+.1f}), {self.warnings} warnings"
        )


def timed_loop(name: str, steps: int, step: Callable[[int], int], bounded: bool = True) -> Outcome:
    """Runs ``step(t)`` (returning its count of non-finite values) ``steps`` times."""
    tenth = max(steps // 10, 1)
    marks: dict[int, float] = {}
    rss_early = rss_mb()
    non_finite = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wall = time.perf_counter()
        start = time.process_time()
        # progress on stderr (an unbounded agent's 10⁵ steps take most of an hour)
        for t in tqdm(range(steps), desc=name, mininterval=30, leave=False, file=sys.stderr):
            if t in (tenth, 2 * tenth, steps - tenth):
                marks[t] = time.process_time()
            if t == 2 * tenth:
                rss_early = rss_mb()
            non_finite += step(t)
        end = time.process_time()
        wall = time.perf_counter() - wall
    early = (marks.get(2 * tenth, end) - marks.get(tenth, start)) / tenth * 1e6
    late = (end - marks.get(steps - tenth, start)) / tenth * 1e6
    return Outcome(
        name, steps, wall, non_finite, early, late, rss_early, rss_mb(), len(caught), bounded
    )


def stream_counts(steps: int, seed: int) -> np.ndarray:
    t = np.arange(1, steps + 1)
    theta = 0.5 + 0.3 * np.sin(2.0 * np.pi * t / 100.0)
    return np.random.default_rng(seed).binomial(15, theta)


def soak_rule(name: str, rule: BeliefRule, counts: np.ndarray) -> Outcome:
    model = rule.model
    stats = [model.stats(successes=int(k), trials=15) for k in range(16)]

    def step(t: int) -> int:
        rule.update(stats[int(counts[t])])
        mean, var = float(np.asarray(rule.mean)), float(np.asarray(rule.variance))
        return int(not (math.isfinite(mean) and math.isfinite(var)))

    return timed_loop(name, counts.size, step)


def agent_spec(text: str) -> tuple[str, dict[str, Any]]:
    """``name`` or ``name:key=value,...`` (values as Python literals) for :func:`make_agent`."""
    name, _, options = text.partition(":")
    kwargs = {}
    for item in filter(None, options.split(",")):
        key, _, value = item.partition("=")
        kwargs[key.strip()] = ast.literal_eval(value.strip())
    return name, kwargs


def soak_bandit(text: str, steps: int, seed: int, check_every: int) -> Outcome:
    name, kwargs = agent_spec(text)
    env = gymnasium.make("bam_rl/SwitchingBandit-v0", max_steps=steps)
    agent = make_agent(name, env, seed=seed, **kwargs)
    observation, info = env.reset(seed=seed)
    agent.reset(observation, info)

    def step(t: int) -> int:
        nonlocal observation, info
        action = agent.act(observation)
        next_observation, reward, terminated, truncated, info = env.step(action)
        agent.observe(action, reward, next_observation, terminated, truncated, info)
        observation = next_observation
        bad = int(not math.isfinite(float(reward)))
        if t % check_every == 0 or t == steps - 1:
            means = np.asarray(agent.means, dtype=np.float64)
            summary = np.asarray(
                [
                    float(v)
                    for v in agent.summary().values()
                    if isinstance(v, (int, float, np.number))
                ],
                dtype=np.float64,
            )
            bad += int(np.count_nonzero(~np.isfinite(means)))
            bad += int(np.count_nonzero(~np.isfinite(summary)))
        if terminated or truncated:
            observation, info = env.reset()
            agent.reset(observation, info)
        return bad

    bounded = name in BOUNDED_AGENTS or kwargs.get("capacity") is not None
    outcome = timed_loop(f"bandit {text}", steps, step, bounded=bounded)
    env.close()
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--stream-steps", type=positive_int, default=1_000_000)
    parser.add_argument("--bandit-steps", type=positive_int, default=100_000)
    parser.add_argument("--capacity", type=positive_int, default=256)
    parser.add_argument("--max-run-length", type=positive_int, default=10_000)
    parser.add_argument(
        "--agents",
        nargs="*",
        default=list(BANDIT_AGENTS),
        help="agent names, each optionally with options: thompson-bam:capacity=256",
    )
    parser.add_argument("--skip", nargs="*", default=[], choices=["bam", "bocd", "bandits"])
    parser.add_argument("--check-every", type=positive_int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-tolerance", type=float, default=1.5)
    parser.add_argument("--rss-tolerance-mb", type=float, default=50.0)
    args = parser.parse_args(argv)

    outcomes: list[Outcome] = []
    model = BetaBinomial()
    counts = stream_counts(args.stream_steps, args.seed)
    if "bam" not in args.skip:
        outcomes.append(
            soak_rule(
                f"stream BAM(capacity={args.capacity})", BAM(model, capacity=args.capacity), counts
            )
        )
        print(outcomes[-1].line(), flush=True)
    if "bocd" not in args.skip:
        outcomes.append(
            soak_rule(
                f"stream BOCD(max_run_length={args.max_run_length})",
                BOCD(model, hazard=1 / 100, max_run_length=args.max_run_length),
                counts,
            )
        )
        print(outcomes[-1].line(), flush=True)
    if "bandits" not in args.skip:
        for name in args.agents:
            outcomes.append(soak_bandit(name, args.bandit_steps, args.seed, args.check_every))
            print(outcomes[-1].line(), flush=True)

    failures = [
        o.name
        for o in outcomes
        if o.non_finite
        or (o.bounded and o.time_ratio() > args.time_tolerance)
        or o.rss_growth() > args.rss_tolerance_mb
    ]
    total = sum(o.seconds for o in outcomes)
    worst_time = max((o.time_ratio() for o in outcomes if o.bounded), default=1.0)
    worst_rss = max((o.rss_growth() for o in outcomes), default=0.0)
    status = "FAIL" if failures else "PASS"
    stream = [
        label
        for key, label in (
            ("bam", f"BAM capacity {args.capacity}"),
            ("bocd", f"BOCD max_run_length {args.max_run_length}"),
        )
        if key not in args.skip
    ]
    ran = ", ".join(
        ([f"stream {args.stream_steps} steps ({', '.join(stream)})"] if stream else [])
        + (
            [f"bandits {args.bandit_steps} steps x {len(args.agents)} agents"]
            if "bandits" not in args.skip
            else []
        )
    )
    print(
        f"soak: {status} — {len(outcomes)} workloads, {ran or 'none'}; "
        f"{sum(o.non_finite for o in outcomes)} non-finite values; "
        f"worst late/early CPU time per step of the bounded workloads x{worst_time:.2f}; "
        f"worst RSS growth "
        f"{worst_rss:+.1f} MB; {total / 60:.1f} min"
        + (f"; failed: {', '.join(failures)}" if failures else ""),
        flush=True,
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
