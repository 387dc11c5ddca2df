"""Many processes on one output folder (issue 26): the acceptance runs, repeated.

* ``--repeats`` times: three ``bam-rl run`` processes started at once on one grid and one
  ``--out``; every process must exit 0 with no traceback, the files must be byte-identical to
  a serial run's, no ``.tmp`` file may be left, and the runs computed (each process prints
  how many it computed) must add up to the grid, each once;
* SIGKILL one of three workers mid-sweep, then restart it: the same files, nothing lost or
  duplicated, and the dead worker's claims taken over (counted from the processes' output).

Usage: ``python -m bam_rl.drills.shared_sweeps [--repeats 20]`` (or ``bam-rl drill
shared-sweeps``).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bam_rl.harness.argtypes import positive_int

GRID = [
    "run", "--env", "bam_rl/SwitchingBandit-v0", "--agent", "ucb,random,thompson",
    "--steps", "2000", "--seeds", "6", "--no-progress", "--backend", "serial", "--format", "csv",
]  # fmt: skip
CODE = "import sys; from bam_rl.cli import main; sys.exit(main(sys.argv[1:]))"


def start(out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CODE, *GRID, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def stats(stdout: str) -> tuple[int, int]:
    line = stdout.strip().splitlines()[-1]
    found = re.search(r"(\d+) computed here", line)
    if found is None:
        raise RuntimeError(f"no 'computed here' count in the run's last line: {line!r}")
    computed = int(found.group(1))
    taken = re.search(r"(\d+) taken over", line)
    return computed, int(taken.group(1)) if taken else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--repeats", type=positive_int, default=20)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="shared-sweeps-"))
    serial = root / "serial"
    subprocess.run([sys.executable, "-c", CODE, *GRID, "--out", str(serial)], check=True,
                   capture_output=True)  # fmt: skip
    reference = files(serial)
    n_runs = len(reference) // 2
    failures = 0
    for repeat in range(args.repeats):
        out = root / f"shared{repeat}"
        processes = [start(out) for _ in range(3)]
        outputs = [p.communicate() for p in processes]
        codes = [p.returncode for p in processes]
        computed = [stats(o)[0] if c == 0 else -1 for (o, _), c in zip(outputs, codes, strict=True)]
        tracebacks = sum("Traceback" in e for _, e in outputs)
        leftovers = [p.name for p in out.rglob("*.tmp")]
        ok = (codes == [0, 0, 0] and files(out) == reference and not leftovers
              and sum(computed) == n_runs and not tracebacks)  # fmt: skip
        failures += not ok
        print(f"repeat {repeat + 1}: exit codes {codes}, computed {computed} (sum "
              f"{sum(computed)} of {n_runs}), identical {files(out) == reference}, "
              f".tmp left {len(leftovers)}, tracebacks {tracebacks}", flush=True)  # fmt: skip
    # SIGKILL one of three mid-sweep, then restart it
    out = root / "killed"
    victim, *others = [start(out) for _ in range(3)]
    claims = out / ".claims"
    while not (claims.is_dir() and list(claims.iterdir())):
        time.sleep(0.01)
    time.sleep(0.3)
    os.kill(victim.pid, signal.SIGKILL)
    victim.communicate()
    outputs = [p.communicate() for p in others]
    restarted = start(out)
    restarted_out, _ = restarted.communicate()
    taken = sum(stats(o)[1] for o, _ in outputs) + stats(restarted_out)[1]
    computed_after = sum(stats(o)[0] for o, _ in outputs) + stats(restarted_out)[0]
    same = files(out) == reference
    print(f"SIGKILL mid-sweep: survivors exit {[p.returncode for p in others]}, restarted exit "
          f"{restarted.returncode}; identical {same}; computed after the kill {computed_after}; "
          f"claims taken over {taken}; .tmp left {len(list(out.rglob('*.tmp')))}")  # fmt: skip
    failures += not same
    repeats_failed = failures - (not same)
    print(f"{args.repeats - repeats_failed} of {args.repeats} repeats passed; kill-and-restart "
          f"{'passed' if same else 'FAILED'}; folder {root}")  # fmt: skip
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
