"""``bam-rl bench``: one table of performance rows (workload, ours, peer, ratio, bar, met).

The workloads are the modules of this package, one per group (each also runs alone as
``python -m bam_rl.bench.<module>``); this module runs the chosen groups, prints one table with the
machine and the load average, writes the rows as JSON with ``--json PATH`` and as the Markdown
table of ``docs/performance.md`` with ``--markdown PATH``. Times are
seconds unless a row says otherwise; ``ratio = peer / ours`` (> 1: we are faster); ``bar`` is
the issue's whole acceptance criterion, read against the columns (``ours ≤ 1 s, ratio ≥ 3``; a
bare ``≤ 1 s`` bounds ``ours``), and ``met`` whether the row meets it (empty: reported only).
The printed table wraps its long cells to 100 columns.
Peers are the optional ``bench`` extra (``pip install 'bam-rl[bench]'``); a missing peer is
a row saying so, not a failure. ``python -m bam_rl.bench`` runs the same table, and
it works from an installed wheel.

Groups (``--only``; default all but ``mnist`` when its data are missing):

* ``import``: ``import bam_rl`` against ``import gymnasium, numpy, scipy.special``, each in
  fresh interpreters (bar: at most 1.3 × as long);
* ``fast``: fast readout (one-point Normal greedy, ``thompson-bam`` 10⁴ steps, BLR selection);
* ``memory``: BAM with ``capacity=256`` on a long ``BinomialStream`` run (``--memory-steps``);
* ``bocd``: BOCD against ``bayesian-changepoint`` and ``fast-bocpd``;
* ``sweeps``: ``bam-rl reproduce bandits --quick`` with ``--jobs 1`` vs ``2``, Ray;
* ``envs``: environment steps; ``piecewise``: the piecewise benchmark's bandits per step
  against SMPyBandits' published times; ``mppi``: :mod:`bam_rl.bench.mppi` (in a
  subprocess);
* ``mnist``: :mod:`bam_rl.bench.mnist` (rotated MNIST at full scale) when the data
  are found;
* ``rollout``: ground truth's batched MuJoCo rollouts (``mujoco.rollout``, 2 threads) against
  its loop of ``MjData`` copies at equal K and H (bar: at most 0.6 × as long);
* ``wrappers``: the plain MuJoCo step, ``bam_rl.wrappers.NonStationary`` and NS-Gym's
  wrapper side by side, and a planning copy (not by default: about half a minute);
* not by default: ``readout`` (Beta-Binomial and BLR greedy against Algorithm 1 loop by loop)
  and ``bocd-pkg`` (against the ``bocd`` package, unpruned).

The reliability drills (the soak, interrupted and shared sweeps, the state-file fuzz, the BOCD
cap, the address-space limit) check rather than time: they are ``bam-rl drill``
(:mod:`bam_rl.drills`); ``--only soak`` and the like say so and exit 2.

``--quick`` shrinks every workload to a smoke test.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

from bam_rl._io import atomic_path

__all__ = ["GROUPS", "add_arguments", "format_table", "main", "run", "run_from_args"]

#: Where a source checkout keeps the shared MNIST files (``../shared/data/mnist``), one of the
#: places the ``mnist`` group looks; from a wheel the path simply does not exist.
_CHECKOUT_MNIST = Path(__file__).resolve().parents[4] / "shared" / "data" / "mnist"

Row = dict[str, Any]


def workload(name: str) -> ModuleType:
    """The workload module ``bam_rl.bench.<name>``, imported on first use (the
    peers and the larger imports load only for the groups that run)."""
    return importlib.import_module(f"{__name__}.{name}")


def make_row(
    workload: str,
    ours: float,
    peer: float = math.nan,
    bar: Any = None,
    met: bool | None = None,
    group: str = "",
) -> Row:
    """One table row; a numeric ``bar`` is a bound in seconds on ``ours``."""
    ours, peer = float(ours), float(peer)
    ratio = peer / ours if ours > 0 and math.isfinite(peer) else math.nan
    if isinstance(bar, (int, float)) and not isinstance(bar, bool):
        bar = f"≤ {bar:g} s"
    return {
        "group": group,
        "workload": workload,
        "ours": ours,
        "peer": peer,
        "ratio": ratio,
        "bar": bar,
        "met": None if met is None else bool(met),
        "load": round(os.getloadavg()[0], 2),
    }


def _rows(group: str, raw: Sequence[tuple]) -> list[Row]:
    out = []
    for entry in raw:
        workload, ours, peer, *rest = entry
        bar, met = (rest + [None, None])[:2]
        out.append(make_row(workload, ours, peer, bar, met, group))
    return out


# ----------------------------------------------------------------------------- groups
def _fast(args: argparse.Namespace) -> list[Row]:
    return _rows("fast", workload("readout").fast_readout_rows(args.quick))


def _readout(args: argparse.Namespace) -> list[Row]:
    return _rows("readout", workload("readout").readout_rows(args.quick))


def _bocd_package(args: argparse.Namespace) -> list[Row]:
    return _rows("bocd-pkg", workload("readout").bocd_rows(args.quick))


def _memory(args: argparse.Namespace) -> list[Row]:
    module = workload("memory")
    steps = args.memory_steps if args.memory_steps else (600 if args.quick else 1_000_000)
    out = None
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        out = str(Path(args.out) / "memory.png")
    raw = module.memory_rows(
        steps,
        256,
        300 if args.quick else 10_000,
        out,
        block=100 if args.quick else 1000,
        progress=not args.quick,
    )
    return _rows("memory", raw)


def _bocd(args: argparse.Namespace) -> list[Row]:
    module = workload("bocd")
    if args.quick:
        return _rows("bocd", module.bocd_rows(300, 30))
    return _rows("bocd", module.bocd_rows(100_000, 150))


def _sweeps(args: argparse.Namespace) -> list[Row]:
    module = workload("sweeps")
    return _rows("sweeps", module.sweep_rows(quick=True, ray=True, smoke=args.quick))


def _envs(args: argparse.Namespace) -> list[Row]:
    return _rows("envs", workload("envs").env_rows(args.quick))


def _rollout(args: argparse.Namespace) -> list[Row]:
    """Ground truth's ``mujoco.rollout`` against its loop of ``MjData`` copies
    (:mod:`bam_rl.bench.rollout`)."""
    return _rows("rollout", workload("rollout").rollout_rows(args.quick))


def _wrappers(args: argparse.Namespace) -> list[Row]:
    """The plain step, ``NonStationary`` and NS-Gym's wrapper side by side
    (:mod:`bam_rl.bench.wrappers`)."""
    return _rows("wrappers", workload("wrappers").wrapper_rows(args.quick))


_MS = re.compile(r"([\d.]+)ms(?:\s*\(\s*([\d.]+)\))?")
_READOUT_LINE = re.compile(r"^(BAM greedy readout.*?)\s+([\d.]+) s\s+\((.*)\)\s*$")
_FLOOR_LINE = re.compile(r"^(NumPy floor of one control step) \((best of \d+)\):.*= ([\d.]+) ms$")


def parse_mppi(stdout: str) -> list[Row]:
    """Rows from the table of :mod:`bam_rl.bench.mppi`: control-step lines (``<label>
    <ours>ms [(<cpu>)] [<peer>ms [(<cpu>)] <ratio>]``), the NumPy floor line and the readout
    line. The script's format is its own; lines that do not parse are skipped."""
    rows = []
    for line in stdout.splitlines():
        line = line.strip()
        match = _READOUT_LINE.match(line)
        if match:
            rows.append(make_row(f"{match[1]} ({match[3]})", float(match[2]), group="mppi"))
            continue
        match = _FLOOR_LINE.match(line)
        if match:
            label = f"{match[1]}: its unavoidable kernels alone ({match[2]})"
            rows.append(make_row(label, float(match[3]) / 1e3, group="mppi"))
            continue
        times = list(_MS.finditer(line))
        if "control step" not in line or not times:
            continue
        label = line[: times[0].start()].strip()
        ours, peer = float(times[0][1]) / 1e3, math.nan
        cpu = [t[2] for t in times if t[2]]
        if len(times) > 1:
            peer = float(times[1][1]) / 1e3
            label += " (peer: pytorch_mppi)"
        if cpu:
            label += f" [CPU ms: {' / '.join(cpu)}]"
        rows.append(make_row(label, ours, peer, group="mppi"))
    return rows


def _mppi(args: argparse.Namespace) -> list[Row]:
    """Runs :mod:`bam_rl.bench.mppi` in a subprocess (its thread settings are its
    own) and turns its table into rows."""
    command = [
        sys.executable,
        "-m",
        f"{__name__}.mppi",
        "--steps",
        "5" if args.quick else "200",
        "--readout-repeats",
        "1" if args.quick else "3",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        message = done.stderr.strip().splitlines()[-1:] or ["failed"]
        return [make_row(f"MPPI benchmark failed: {message[0][:80]}", math.nan, group="mppi")]
    rows = parse_mppi(done.stdout)
    if not rows:
        rows.append(
            make_row("MPPI benchmark: no rows parsed (see its output)", math.nan, group="mppi")
        )
    return rows


def _mnist_directory(args: argparse.Namespace) -> Path | None:
    candidates = [
        args.mnist,
        os.environ.get("BAM_RL_MNIST"),
        _CHECKOUT_MNIST,
    ]
    for candidate in candidates:
        if candidate and (Path(candidate) / "t10k-labels-idx1-ubyte.gz").exists():
            return Path(candidate)
    return None


def _mnist(args: argparse.Namespace) -> list[Row]:
    directory = _mnist_directory(args)
    if directory is None:
        return [
            make_row(
                "rotated MNIST: data not found (--mnist DIR or $BAM_RL_MNIST)",
                math.nan,
                group="mnist",
            )
        ]
    seeds = 1 if args.quick else 10
    out = Path(args.out or "results/bench") / "mnist"
    command = [
        sys.executable,
        "-m",
        f"{__name__}.mnist",
        "--data",
        str(directory),
        "--seeds",
        str(seeds),
        "--jobs",
        "2",
        "--out",
        str(out),
    ]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        message = done.stderr.strip().splitlines()[-1:] or ["failed"]
        return [make_row(f"rotated MNIST failed: {message[0][:80]}", math.nan, group="mnist")]
    match = re.search(r"wall time ([\d.]+) s", done.stdout)
    seconds = float(match[1]) if match else wall
    target = 180.0 if seeds == 10 else None
    return [
        make_row(
            f"rotated MNIST reproduce, {seeds} seeds x 8 domains, 2 workers",
            seconds,
            bar=target,
            met=None if target is None else seconds <= target,
            group="mnist",
        )
    ]


def _import(args: argparse.Namespace) -> list[Row]:
    """``import bam_rl`` against ``import gymnasium, numpy, scipy.special`` in fresh
    interpreters (:mod:`bam_rl.bench.import_time`)."""
    return _rows("import", workload("import_time").import_rows(args.quick))


def _piecewise(args: argparse.Namespace) -> list[Row]:
    return _rows("piecewise", workload("piecewise").piecewise_rows(args.quick))


GROUPS: dict[str, Callable[[argparse.Namespace], list[Row]]] = {
    "import": _import,
    "fast": _fast,
    "memory": _memory,
    "bocd": _bocd,
    "sweeps": _sweeps,
    "envs": _envs,
    "piecewise": _piecewise,
    "mppi": _mppi,
    "mnist": _mnist,
    "readout": _readout,
    "bocd-pkg": _bocd_package,
    "wrappers": _wrappers,
    "rollout": _rollout,
}
#: The reliability drills that were ``--only`` groups: now ``bam-rl drill NAME``.
MOVED_TO_DRILL = ("soak", "interrupt", "fuzz", "bocd-cap", "address-space", "shared-sweeps")


def _group(text: str) -> str:
    """An ``--only`` value; a drill's name is a usage error naming ``bam-rl drill``."""
    if text in MOVED_TO_DRILL:
        raise argparse.ArgumentTypeError(
            f"{text!r} is a reliability drill, not a benchmark: run `bam-rl drill {text}`"
        )
    return text


#: Groups run when ``--only`` is not given (``mnist`` only when its data are found).
DEFAULT_GROUPS = (
    "import",
    "fast",
    "memory",
    "bocd",
    "sweeps",
    "envs",
    "piecewise",
    "mppi",
    "rollout",
    "mnist",
)


# ------------------------------------------------------------------------------ table
def _seconds(value: float) -> str:
    if not math.isfinite(value):
        return "—"
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


#: Width of the printed table: the workload and bar cells wrap to fit it.
TABLE_WIDTH = 100
#: Widest bar cell before it wraps.
BAR_WIDTH = 22


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, continuation lines indented by two."""
    lines = textwrap.wrap(
        text, width, subsequent_indent="  ", break_long_words=True, break_on_hyphens=False
    )
    return lines or [""]


def format_table(rows: Sequence[Row], width: int = TABLE_WIDTH) -> str:
    """The rows as a fixed-width text table at most ``width`` characters wide.

    The workload and bar cells wrap onto continuation lines (indented by two spaces); the
    numbers stay on a row's first line. ``bar`` is the whole acceptance criterion, read
    against the columns (``ours ≤ 1 s, ratio ≥ 3``); a bare ``≤ X s`` bounds ``ours``.
    """
    header = ("workload", "ours", "peer", "ratio", "bar", "met", "load")
    body = [
        (
            str(row["workload"]),
            _seconds(row["ours"]),
            _seconds(row["peer"]),
            "—" if not math.isfinite(row["ratio"]) else f"{row['ratio']:.2f}",
            str(row["bar"] or ""),
            "" if row["met"] is None else ("yes" if row["met"] else "NO"),
            f"{row['load']:.1f}",
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    widths[4] = min(widths[4], BAR_WIDTH)
    rest = sum(widths[1:]) + 2 * (len(header) - 1)
    widths[0] = min(widths[0], max(width - rest, 24))
    lines = []
    for index, line in enumerate([header, *body]):
        cells = [_wrap(cell, widths[i]) if i in (0, 4) else [cell] for i, cell in enumerate(line)]
        for k in range(max(len(cell) for cell in cells)):
            parts = [
                (cell[k] if k < len(cell) else "").ljust(widths[i])
                if i in (0, 4)
                else (cell[k] if k < len(cell) else "").rjust(widths[i])
                for i, cell in enumerate(cells)
            ]
            lines.append("  ".join(parts).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


#: Markers of the generated table in a Markdown file (``docs/performance.md``).
MARKDOWN_START = "<!-- bam-rl bench: start -->"
MARKDOWN_END = "<!-- bam-rl bench: end -->"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: Sequence[Row], info: dict[str, Any]) -> str:
    """The rows as one Markdown table, headed by the machine, the date and the load."""
    lines = [
        f"Measured by `bam-rl bench{' --quick' if info.get('quick') else ''}` in one run on "
        f"{info['date']}: {info['machine']} {info['processor']}, {info['cores']} cores, "
        f"Python {info['python']}, load average {info['load_at_start']} at the start and "
        f"{info.get('load_at_end', '?')} at the end. Times in seconds; ratio = peer / ours.",
        "",
        "| group | workload | ours | peer | ratio | bar | met | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        ratio = row["ratio"]
        lines.append(
            "| "
            + " | ".join(
                _cell(cell)
                for cell in (
                    row["group"],
                    row["workload"],
                    _seconds(row["ours"]),
                    _seconds(row["peer"]),
                    "—" if not math.isfinite(ratio) else f"{ratio:.2f}×",
                    row["bar"] or "—",
                    "—" if row["met"] is None else ("yes" if row["met"] else "**no**"),
                    f"{row['load']:.1f}",
                )
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


def write_markdown(path: str | Path, table: str) -> None:
    """Writes ``table`` between the markers of ``path`` (the rest of the file untouched), or
    as the whole file when it has no markers; atomically either way."""
    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    if MARKDOWN_START in text and MARKDOWN_END in text.split(MARKDOWN_START, 1)[1]:
        head, rest = text.split(MARKDOWN_START, 1)
        tail = rest.split(MARKDOWN_END, 1)[1]
        text = f"{head}{MARKDOWN_START}\n{table}{MARKDOWN_END}{tail}"
    else:
        text = table
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def machine() -> dict[str, Any]:
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "load_at_start": round(os.getloadavg()[0], 2),
    }


def run(groups: Sequence[str], args: argparse.Namespace) -> list[Row]:
    """Runs ``groups`` in order; a group that raises becomes a failed row."""
    rows: list[Row] = []
    for name in groups:
        print(f"[{name}] (load {os.getloadavg()[0]:.2f})", flush=True)
        try:
            rows += GROUPS[name](args)
        except Exception as error:  # one broken group must not hide the rest
            rows.append(
                make_row(
                    f"{name}: FAILED ({type(error).__name__}: {error})"[:120], math.nan, group=name
                )
            )
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``bam-rl bench`` and ``python -m bam_rl.bench``."""
    parser.add_argument("--quick", action="store_true", help="smoke-test sizes (seconds)")
    parser.add_argument(
        "--only",
        nargs="+",
        type=_group,
        choices=tuple(GROUPS),
        default=None,
        metavar="GROUP",
        help=f"groups to run: {', '.join(GROUPS)}",
    )
    parser.add_argument("--json", default=None, metavar="PATH", help="write the rows as JSON")
    parser.add_argument(
        "--markdown",
        default=None,
        metavar="PATH",
        help=(
            "write the rows as a Markdown table: between the markers "
            f"{MARKDOWN_START!r} and {MARKDOWN_END!r} when PATH has them (docs/performance.md), "
            "else as the whole file"
        ),
    )
    parser.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="directory for figures (memory.png) and MNIST outputs",
    )
    parser.add_argument(
        "--memory-steps",
        type=int,
        default=None,
        metavar="N",
        help="steps of the bounded-memory run (default 10^6; --quick 600)",
    )
    parser.add_argument("--mnist", default=None, metavar="DIR", help="MNIST directory")


def report_rows(info: dict[str, Any], rows: list[Row], args: argparse.Namespace) -> None:
    """The end of a ``bench`` or ``drill`` run: adds the load now to ``info``, prints the
    machine line and the table, and writes ``--json`` (``info``, ``--quick`` and the rows,
    non-finite numbers as null) atomically."""
    info["load_at_end"] = round(os.getloadavg()[0], 2)
    print(
        f"\n# {info['date']}, {info['machine']} {info['processor']}, {info['cores']} cores, "
        f"Python {info['python']}, load {info['load_at_start']} → {info['load_at_end']}"
        f"{', --quick' if args.quick else ''}"
    )
    print(format_table(rows))
    if args.json:
        path = Path(args.json)
        clean = [
            {
                k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in row.items()
            }
            for row in rows
        ]
        with atomic_path(path) as temporary:
            temporary.write_text(
                json.dumps(
                    {**info, "quick": bool(args.quick), "rows": clean},
                    indent=2,
                    ensure_ascii=False,
                )
                + "\n",
                encoding="utf-8",
            )
        print(f"rows written to {path}")


def run_from_args(args: argparse.Namespace) -> int:
    """Runs the bench for parsed arguments; prints the table, writes ``--json``."""
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")
    groups = args.only or [g for g in DEFAULT_GROUPS if g != "mnist" or _mnist_directory(args)]
    info = machine()
    rows = run(groups, args)
    report_rows(info, rows, args)
    if args.markdown:
        write_markdown(args.markdown, markdown_table(rows, {**info, "quick": bool(args.quick)}))
        print(f"table written to {args.markdown}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bam_rl.bench`` (same options as ``bam-rl bench``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))
