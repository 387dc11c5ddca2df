"""Import time: ``import bam_rl`` against ``import gymnasium, numpy, scipy.special``.

Both run side by side in fresh interpreters (``python -c ...``, alternating, from an empty
temporary directory so the installed package is what loads), each timed from the parent as
the wall time of the whole process, so the interpreter's start-up is in both. One untimed
run of each first compiles the bytecode a plain ``pip install`` would have compiled (with
``PYTHONDONTWRITEBYTECODE`` cleared for these runs: a source checkout otherwise compiles every
module of ours on every import, which is not what a user's install does). The row reports
medians; the bar (issue 38): ``import bam_rl`` within 1.3 × the reference, the three packages
every user of the toolkit loads anyway.

Run alone: ``python -m bam_rl.bench.import_time [--repeats N]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

__all__ = ["BAR", "OURS", "REFERENCE", "import_rows", "import_seconds", "main"]

#: What is timed, and what it is timed against.
OURS = "import bam_rl"
REFERENCE = "import gymnasium, numpy, scipy.special"
#: ``import bam_rl`` may take at most this multiple of :data:`REFERENCE`.
BAR = 1.3


def _seconds(code: str, cwd: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, check=True)
    return time.perf_counter() - start


def import_seconds(repeats: int) -> tuple[list[float], list[float]]:
    """Wall seconds of ``repeats`` fresh interpreters each running :data:`OURS` and
    :data:`REFERENCE`, alternating (after one untimed warm-up of each).

    Raises:
        ValueError: ``repeats`` is below 1.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    ours: list[float] = []
    reference: list[float] = []
    with tempfile.TemporaryDirectory() as cwd:
        _seconds(OURS, cwd, env)
        _seconds(REFERENCE, cwd, env)
        for _ in range(repeats):
            ours.append(_seconds(OURS, cwd, env))
            reference.append(_seconds(REFERENCE, cwd, env))
    return ours, reference


def import_rows(quick: bool = False, repeats: int | None = None) -> list[tuple]:
    """The bench row (workload, ours, peer, bar, met): median wall seconds of each import."""
    n = repeats if repeats is not None else (3 if quick else 15)
    ours, reference = import_seconds(n)
    mine, peer = statistics.median(ours), statistics.median(reference)
    return [
        (
            f"`{OURS}` in a fresh interpreter, median of {n} (peer: `{REFERENCE}`; "
            f"fastest {min(ours):.3f} s against {min(reference):.3f} s)",
            mine,
            peer,
            f"ours ≤ {BAR:g}× peer (ratio ≥ {1 / BAR:.2f})",
            mine <= BAR * peer,
        )
    ]


def main(argv: list[str] | None = None) -> int:
    """Prints both medians and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--repeats", type=int, default=15, help="fresh interpreters each")
    args = parser.parse_args(argv)
    ((label, ours, peer, bar, met),) = import_rows(repeats=args.repeats)
    print(f"{label}: {ours:.3f} s against {peer:.3f} s, ours / peer {ours / peer:.2f}; bar {bar}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
