"""The piecewise benchmark's bandits: seconds an agent spends in ``act`` + ``observe`` a step.

Problem 1 of Besson et al. (T = 5000), as ``bam-rl reproduce piecewise-bandits`` runs it
(:func:`bam_rl.experiments.piecewise.run_cell`: an untimed warm-up, then the agent's
time in ``act`` and ``observe``, with the replayed reward's look-up between them, ~0.1 µs).
The peers are the per-step times published for SMPyBandits on Problem 1 (T = 5000):
GLR-klUCB 314 µs and klUCB 120 µs (the issue's bars of 31 and 12 µs at 10×); Oracle-Restart
klUCB 711 ms, M-klUCB 943 ms and CUSUM-klUCB 46 s a run (Besson's thesis, appendix of ch. 6:
142 µs, 189 µs and 9.2 ms a step); the bar is 10× faster than that. The other agents have no
published time (``scripts/piecewise/smpybandits_peer.py`` times SMPyBandits 0.9.7 beside them on the
same streams).

Usage: ``python -m bam_rl.bench.piecewise [--runs 5]`` (or ``bam-rl bench --only
piecewise``).
"""

from __future__ import annotations

import argparse
import math

#: Published SMPyBandits seconds per step on Problem 1 (where known) and the speed-up asked.
PUBLISHED = {
    "glr-klucb": 314e-6,
    "klucb": 120e-6,
    "oracle-restart-klucb": 0.711 / 5000,
    "m-klucb": 0.943 / 5000,
    "cusum-klucb": 46.0 / 5000,
}
SPEEDUP = 10.0
AGENTS = (
    "klucb",
    "glr-klucb",
    "glr-klucb-global",
    "cusum-klucb",
    "m-klucb",
    "sw-klucb",
    "d-klucb",
    "dts",
    "exp3s",
    "thompson",
    "oracle-restart-klucb",
)


def piecewise_rows(quick: bool = False, runs: int = 5) -> list[tuple]:
    """Bench rows (workload, ours, peer, bar, met): seconds per step of every agent."""
    from bam_rl.experiments.piecewise import run_cell

    rows: list[tuple] = []
    n_runs = 1 if quick else runs
    for name in AGENTS:
        cell = run_cell(1, name, n_runs)
        last = cell[cell["step"] == cell["horizon"]]
        seconds = float(last["agent_seconds"].sum()) / float(last["horizon"].sum())
        peer = PUBLISHED.get(name, math.nan)
        known = math.isfinite(peer)
        rows.append(
            (
                f"piecewise {name}, Problem 1, act + observe per step ({n_runs} runs"
                + ("; peer: SMPyBandits, published)" if known else ")"),
                seconds,
                peer,
                f"ours ≤ {peer / SPEEDUP * 1e6:.0f} µs (ratio ≥ {SPEEDUP:g})" if known else None,
                seconds <= peer / SPEEDUP if known else None,
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Prints the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    for workload, ours, peer, bar, met in piecewise_rows(args.quick, args.runs):
        line = f"{workload}: {ours * 1e6:.2f} µs"
        if math.isfinite(peer):
            line += f" (published {peer * 1e6:.0f} µs, {peer / ours:.1f}×; bar {bar}: {met})"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
