"""``bam-rl drill``: the reliability drills, each a check that passes or fails (not a timing).

A benchmark (``bam-rl bench``, :mod:`bam_rl.bench`) times our code against its peers;
a drill checks that something holds under stress: long runs, killed processes, mutated files,
a small address space. The drills are the modules of this package, one per drill, and each
also runs alone with all its own options as ``python -m bam_rl.drills.<module>``
(``bam-rl drill NAME`` runs them; the old ``scripts/`` entry points are gone). This module runs the
chosen drills at the sizes below, prints each one's output and then one table of verdicts (the bench
table's columns: ``ours`` is the wall time, ``bar`` is ``exit 0``), writes the rows as JSON
with ``--json PATH``, and exits 1 when a drill fails.

Drills (``bam-rl drill NAME [NAME ...]``; each takes minutes, ``--quick`` seconds):

* ``soak``: bounded BAM and BOCD on a long stream and every bandit agent, checked for flat time
  per step and memory and no non-finite value (:mod:`.soak`; here a fraction of the full soak);
* ``interrupt``: sweeps SIGKILLed at every point of a run's write and resumed lose, duplicate
  and corrupt nothing (:mod:`.interrupt`);
* ``shared-sweeps``: processes sharing a sweep folder, one SIGKILLed and restarted
  (:mod:`.shared_sweeps`);
* ``fuzz``: mutated MPPI state files, each refused at load or a working agent
  (:mod:`.fuzz`);
* ``bocd-cap``: the capped BOCD against the uncapped one, posterior moments within 1 %
  (:mod:`.bocd_cap`);
* ``address-space``: every size argument under a 2 GiB address-space limit, built or refused,
  never out of memory (:mod:`.address_space`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import math
import os
import time
from collections.abc import Callable, Sequence
from types import ModuleType

from bam_rl.bench import Row, machine, make_row, report_rows

__all__ = ["DRILLS", "add_arguments", "main", "run", "run_from_args"]


def drill_module(name: str) -> ModuleType:
    """The drill module ``bam_rl.drills.<name>``, imported on first use."""
    return importlib.import_module(f"{__name__}.{name}")


def checked_run(group: str, label: str, main: Callable[[list[str]], int], argv: list[str]) -> Row:
    """One row for a drill: its ``main(argv)`` exit status (``met``: 0), its wall time, and its
    last printed line as the row's label (its whole output is printed too)."""
    buffer = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(buffer):
        status = main(argv)
    seconds = time.perf_counter() - start
    lines = buffer.getvalue().strip().splitlines()
    print(buffer.getvalue(), end="")
    verdict = lines[-1].strip() if lines else "no output"
    return make_row(
        f"{label}: {verdict}"[:300], seconds, bar="exit 0", met=status == 0, group=group
    )


def _soak(args: argparse.Namespace) -> Row:
    """The soak (:mod:`.soak`): a fraction of the full soak (which takes hours)."""
    if args.quick:
        argv = ["--stream-steps", "300", "--bandit-steps", "200", "--capacity", "16"]
        argv += ["--check-every", "10", "--time-tolerance", "1e9"]
    else:
        argv = ["--stream-steps", "100000", "--bandit-steps", "20000"]
    return checked_run("soak", "soak", drill_module("soak").main, argv)


def _interrupt(args: argparse.Namespace) -> Row:
    """Sweeps SIGKILLed at every point of a run's write and resumed (:mod:`.interrupt`)."""
    return checked_run("interrupt", "interrupted sweeps", drill_module("interrupt").main, [])


def _shared_sweeps(args: argparse.Namespace) -> Row:
    """Three processes on one sweep folder, and one SIGKILLed and restarted
    (:mod:`.shared_sweeps`): the serial run's files, each run once."""
    argv = ["--repeats", "1" if args.quick else "20"]
    main = drill_module("shared_sweeps").main
    return checked_run("shared-sweeps", "shared sweep folder", main, argv)


def _fuzz(args: argparse.Namespace) -> Row:
    """Mutated MPPI state files (:mod:`.fuzz`): each refused at load or a working agent."""
    argv = ["--cases", "10" if args.quick else "200"]
    return checked_run("fuzz", "state-file fuzz", drill_module("fuzz").main, argv)


def _bocd_cap(args: argparse.Namespace) -> Row:
    """The capped BOCD against the uncapped one on a stationary stream (:mod:`.bocd_cap`)."""
    argv = ["--steps", "2000", "--every", "1000"] if args.quick else []
    return checked_run("bocd-cap", "BOCD cap", drill_module("bocd_cap").main, argv)


def _address_space(args: argparse.Namespace) -> Row:
    """Every size argument under a 2 GiB address-space limit (:mod:`.address_space`)."""
    argv = ["--quick", "--only", "Memory"] if args.quick else []
    main = drill_module("address_space").main
    return checked_run("address-space", "size arguments under 2 GiB", main, argv)


DRILLS: dict[str, Callable[[argparse.Namespace], Row]] = {
    "soak": _soak,
    "interrupt": _interrupt,
    "shared-sweeps": _shared_sweeps,
    "fuzz": _fuzz,
    "bocd-cap": _bocd_cap,
    "address-space": _address_space,
}


def run(names: Sequence[str], args: argparse.Namespace) -> list[Row]:
    """Runs the drills ``names`` in order; a drill that raises becomes a failed row."""
    rows: list[Row] = []
    for name in names:
        print(f"[{name}] (load {os.getloadavg()[0]:.2f})", flush=True)
        try:
            rows.append(DRILLS[name](args))
        except Exception as error:  # one broken drill must not hide the rest
            label = f"{name}: FAILED ({type(error).__name__}: {error})"[:120]
            rows.append(make_row(label, math.nan, bar="exit 0", met=False, group=name))
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``bam-rl drill`` and ``python -m bam_rl.drills``."""
    parser.add_argument(
        "drills",
        nargs="+",
        choices=tuple(DRILLS),
        metavar="DRILL",
        help=f"drills to run: {', '.join(DRILLS)}",
    )
    parser.add_argument("--quick", action="store_true", help="smoke-test sizes (seconds)")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the rows as JSON")


def run_from_args(args: argparse.Namespace) -> int:
    """Runs the drills for parsed arguments; prints the table, writes ``--json``; 0 when
    every drill passed, 1 otherwise."""
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")
    info = machine()
    rows = run(list(dict.fromkeys(args.drills)), args)
    report_rows(info, rows, args)
    return 0 if all(row["met"] for row in rows) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bam_rl.drills`` (same arguments as ``bam-rl drill``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))
