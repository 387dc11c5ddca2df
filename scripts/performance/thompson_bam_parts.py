"""Serves docs/performance.md: where a ``thompson-bam`` step's time goes, part by part.

Times ``bench_against_commit.py``'s ``thompson-bam`` workload (10-arm switching bandit, BAM
per arm at λ = 0, ``--steps`` steps) as it is and with one part of the step taken away, all
in one process, interleaved round by round, and prints the CPU µs per step of each variant
(median over the rounds of the best of ``--repeats``) beside plain Thompson sampling's::

    python scripts/performance/thompson_bam_parts.py [--steps 2500] [--rounds 3]

A part is taken away either by *replay* — the function returns, call by call, what it
returned in a recorded run of the same seeds (the step's other work and choices stay the
same) — or, for the datum check, by making it a no-op (the data are the recorded run's, which
pass it). Replays: the fused one-point step ``one_point_posterior`` (readout and
posterior), the compiled greedy ``one_point_readout`` (its picks and weights copied from the
recording instead of computed) and the Thompson draw's parameters
(``ThompsonSampling._gaussian_draw_params``, copies of the recorded means and standard
deviations). Skipped check: the agent's proof that its datum is possible
(``proves_normal_datum`` answers yes). A measurement only: every patch is undone before the
next variant, and nothing is written.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any, cast


def _loop(rule: str, steps: int) -> Callable[[], None]:
    """The bench's Thompson workload (``bench_against_commit.py``'s: act, step, observe on
    ``SwitchingBandit-v0``), per-arm ``rule`` ``"recursive"`` or ``"bam"``."""
    from bench_against_commit import _thompson  # this script's folder is on sys.path

    return cast(
        Callable[[], None], _thompson("thompson-bam" if rule == "bam" else "thompson", steps)
    )


class _Patch:
    """Sets ``(owner, name) -> value`` pairs for the duration of a ``with`` block."""

    def __init__(self, pairs: list[tuple[Any, str, Any]]):
        self.pairs = pairs
        self.saved: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> None:
        self.saved = [(owner, name, getattr(owner, name)) for owner, name, _ in self.pairs]
        for owner, name, value in self.pairs:
            setattr(owner, name, value)

    def __exit__(self, *exc: object) -> None:
        for owner, name, value in reversed(self.saved):
            setattr(owner, name, value)


def _recorder(function: Callable[..., Any], log: list[Any]) -> Callable[..., Any]:
    def record(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        log.append(result)
        return result

    return record


def _replayer(log: list[Any]) -> Callable[[], Callable[..., Any]]:
    """A fresh replaying function per run: returns the recorded results in order."""

    def fresh() -> Callable[..., Any]:
        results: Iterator[Any] = iter(log)
        return lambda *args, **kwargs: next(results)

    return fresh


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--steps", type=int, default=2500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    if args.steps < 200 or args.rounds < 1 or args.repeats < 1:
        parser.error("--steps must be >= 200, --rounds and --repeats >= 1")
    bam_module = importlib.import_module("bam_rl.beliefs.bam")
    bandits = importlib.import_module("bam_rl.agents.bandits")
    greedy = importlib.import_module("bam_rl.readout.greedy")
    steps = args.steps
    bam, plain = _loop("bam", steps), _loop("recursive", 10_000)
    bam()  # compiled code and the tables of constants, outside the timing and the recording
    kernel = greedy._kernel()
    steps_taken: list[Any] = []
    kernel_results: list[tuple[int, Any, Any]] = []
    draws: list[Any] = []
    thompson = bandits.ThompsonSampling
    draw_params = thompson._gaussian_draw_params

    def record_draw(agent: Any) -> Any:
        params = draw_params(agent)
        draws.append(None if params is None else (params[0].copy(), params[1].copy()))
        return params

    def record_kernel(*call: Any) -> int:
        k = int(kernel(*call))  # -1: declined; k >= 0 picks (or -2 - k: objectives unsafe)
        picked = k if k >= 0 else max(-2 - k, 0)
        kernel_results.append((k, call[4][4, :picked].copy(), call[11].copy()))
        return k

    with _Patch(
        [
            (
                bam_module,
                "one_point_posterior",
                _recorder(bam_module.one_point_posterior, steps_taken),
            ),
            (greedy, "_ONE_POINT_KERNEL", record_kernel),
            (thompson, "_gaussian_draw_params", record_draw),
        ]
    ):
        bam()
    replay_steps = _replayer(steps_taken)

    def replay_draws() -> Callable[[Any], Any]:
        results = iter(draws)
        return lambda agent: next(results)

    def replay_kernel() -> Callable[..., int]:
        results = iter(kernel_results)

        def copy(*call: Any) -> int:
            k, picks, weights = next(results)
            call[4][4, : picks.size] = picks  # the picks row of the buffers' ints
            call[11][:] = weights
            return k

        return copy

    def yes(*args: Any, **kwargs: Any) -> bool:
        return True

    variants: dict[str, Callable[[], list[tuple[Any, str, Any]]]] = {
        "thompson-bam as it is": list,
        "one_point_posterior replayed": lambda: [
            (bam_module, "one_point_posterior", replay_steps())
        ],
        "compiled greedy replayed (copies)": lambda: [
            (greedy, "_ONE_POINT_KERNEL", replay_kernel())
        ],
        "draw parameters replayed": lambda: [(thompson, "_gaussian_draw_params", replay_draws())],
        "datum's possibility taken as proven": lambda: [(bandits, "proves_normal_datum", yes)],
    }
    times: dict[str, list[float]] = {name: [] for name in ["plain Thompson sampling", *variants]}
    load = os.getloadavg()
    for _ in range(args.rounds):
        best = float("inf")
        for _ in range(args.repeats):
            start = time.process_time()
            plain()
            best = min(best, time.process_time() - start)
        times["plain Thompson sampling"].append(best / 10_000)
        for name, pairs in variants.items():
            best = float("inf")
            for _ in range(args.repeats):
                with _Patch(pairs()):
                    start = time.process_time()
                    bam()
                    best = min(best, time.process_time() - start)
            times[name].append(best / steps)
    end = os.getloadavg()
    print(
        f"# {steps} steps, {args.rounds} rounds, best of {args.repeats}; load average "
        f"{load[0]:.2f} at the start, {end[0]:.2f} at the end; CPU µs per step"
    )
    reference = statistics.median(times["plain Thompson sampling"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<46} {median * 1e6:8.1f}   {median / reference:5.2f} × plain")


if __name__ == "__main__":
    main()
