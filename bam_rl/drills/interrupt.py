"""Kills sweeps with SIGKILL at several points, resumes them, and checks every row.

Acceptance script of issue 14 (item 4): a sweep written to ``--out`` is killed

* while runs compute (twice, at random moments),
* mid-write: a run file half written to its temporary file (CSV and Parquet),
* after a run's record is written but before its file is renamed into place,
* with the loky backend (the parent killed; its workers go with it),
* during a resume,

and between kills one finished file is truncated (as a disk or a user might). After every
kill, every visible run file must have a record that matches it. A final resume must then
return exactly the rows of an uninterrupted in-memory sweep: zero lost, zero duplicated,
zero corrupted rows, and no temporary files left. Prints one summary line; exit status 1 if
any check fails. POSIX only (SIGKILL, process groups)::

    python -m bam_rl.drills.interrupt            # ~1.5 minutes
    python -m bam_rl.drills.interrupt --keep DIR  # keep the sweep directory
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

N_STEPS = 20_000


def grid() -> list[Any]:
    from bam_rl.harness import make_grid

    return make_grid(
        ["ucb", "random", "thompson"],
        {
            "a": ("bam_rl/SwitchingBandit-v0", {"config_seed": 0}),
            "b": ("bam_rl/SwitchingBandit-v0", {"config_seed": 1}),
        },
        seeds=2,
        n_steps=N_STEPS,
        root_seed=0,
    )


# ------------------------------------------------------------------------------ child
def child(point: str, out: str, fmt: str, backend: str) -> None:
    """Runs the sweep; at ``point`` it prints ``PAUSED`` and waits to be killed."""
    import bam_rl.harness.sweeps as sweeps

    warnings.simplefilter("ignore")  # "recomputing run ..." is expected here

    def pause() -> None:
        print("PAUSED", flush=True)
        time.sleep(600)

    if point == "mid-write":
        writes = {"n": 0}
        for method in ("to_csv", "to_parquet"):
            real = getattr(pd.DataFrame, method)

            def half(
                self: pd.DataFrame, path: Any, *args: Any, _real: Any = real, **kwargs: Any
            ) -> Any:
                if not str(path).endswith(".tmp"):
                    return _real(self, path, *args, **kwargs)
                writes["n"] += 1
                if writes["n"] < 2:  # let one run finish first
                    return _real(self, path, *args, **kwargs)
                buffer: Any = io.BytesIO() if _real.__name__ == "to_parquet" else io.StringIO()
                _real(self, buffer, *args, **kwargs)
                data = buffer.getvalue()
                mode = "wb" if isinstance(data, bytes) else "w"
                with open(path, mode) as stream:
                    stream.write(data[: len(data) // 2])
                    stream.flush()
                    os.fsync(stream.fileno())
                pause()
                return None

            setattr(pd.DataFrame, method, half)
    elif point == "record-before-rename":
        real_atomic = sweeps.atomic_path
        records = {"n": 0}

        @contextlib.contextmanager
        def hooked(path: Any) -> Any:
            with real_atomic(path) as temporary:
                yield temporary
            if str(path).endswith(".json"):
                records["n"] += 1
                if records["n"] >= 2:
                    pause()  # the record is in place, the run file still a temporary

        sweeps.atomic_path = hooked
    sweeps.run_many(grid(), backend=backend, n_jobs=2, out_dir=out, progress=False, fmt=fmt)


# ------------------------------------------------------------------------------ parent
def run_files(out: Path) -> list[Path]:
    return sorted(
        p for p in out.iterdir() if p.suffix in (".csv", ".parquet") and not p.name.startswith(".")
    )


def unverified_files(out: Path) -> list[str]:
    """Visible run files whose record is missing or does not match them."""
    import bam_rl.harness.sweeps as sweeps

    specs = {spec.key: spec for spec in grid()}
    bad = []
    for path in run_files(out):
        frame, _ = sweeps._verify(path, specs[path.name.rsplit(".", 1)[0]])
        if frame is None:
            bad.append(path.name)
    return bad


def kill_once(out: Path, point: str, fmt: str, backend: str = "serial") -> dict[str, Any]:
    """Starts a child sweep in its own process group and SIGKILLs the group at ``point``."""
    before = len(run_files(out))
    command = [sys.executable, "-m", __name__, "--child", point, str(out), fmt, backend]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True)
    killed = False
    try:
        deadline = time.monotonic() + 120
        if point in ("mid-write", "record-before-rename"):
            assert process.stdout is not None
            line = process.stdout.readline()
            killed = line.strip() == "PAUSED"
        else:
            wanted = before + (1 if point == "loky" else 2)
            while len(run_files(out)) < wanted and process.poll() is None:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.005)
            time.sleep(random.uniform(0.0, 0.3))  # anywhere in the next run
            killed = process.poll() is None
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    temporaries = [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    return {
        "point": point,
        "killed": killed,
        "files": len(run_files(out)),
        "temporaries": temporaries,
        "unverified": unverified_files(out),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--keep", default=None, help="directory for the sweep (kept)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill timings")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    if os.name != "posix":
        print("interrupt_sweeps: needs POSIX (SIGKILL, process groups)")
        return 1
    random.seed(args.seed)
    from bam_rl.harness import run_many

    start = time.perf_counter()
    reference = run_many(grid(), backend="serial", progress=False)
    holder = tempfile.TemporaryDirectory() if args.keep is None else None
    base = Path(args.keep if holder is None else holder.name)
    failures: list[str] = []
    kills: list[dict[str, Any]] = []
    repaired = {"temporaries": 0, "damaged": 0}
    rows_checked = 0
    try:
        for fmt in ("csv", "parquet"):
            out = base / fmt
            out.mkdir(parents=True, exist_ok=True)
            plan = [
                "computing",
                "mid-write",
                "record-before-rename",
                "computing",
                "loky",
                "mid-write",
            ]
            for number, point in enumerate(plan):
                backend = "loky" if point == "loky" else "serial"
                result = kill_once(out, point, fmt, backend)
                kills.append(result)
                if result["unverified"]:
                    failures.append(
                        f"{fmt}/{point}: visible files without a matching record "
                        f"{result['unverified']}"
                    )
                repaired["temporaries"] += len(result["temporaries"])
                if number == 2:  # damage a finished file between kills
                    victim = run_files(out)[0]
                    raw = victim.read_bytes()
                    victim.write_bytes(raw[: len(raw) * 6 // 10])
                    repaired["damaged"] += 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the "recomputing run ..." warnings
                resumed = run_many(grid(), backend="serial", out_dir=out, progress=False, fmt=fmt)
            keys = ["method", "config", "seed_index", "step"]
            merged = reference.merge(
                resumed, on=keys, how="outer", indicator=True, suffixes=("", "_resumed")
            )
            lost = int((merged["_merge"] == "left_only").sum())
            extra = int((merged["_merge"] == "right_only").sum())
            duplicated = int(resumed.duplicated(keys).sum())
            both = merged[merged["_merge"] == "both"]
            corrupted = 0
            for column in reference.columns:
                if column in keys:
                    continue
                left, right = both[column], both[f"{column}_resumed"]
                differs = ~((left == right) | (left.isna() & right.isna()))
                corrupted = max(corrupted, int(differs.sum()))
            stale = [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
            try:
                pd.testing.assert_frame_equal(resumed, reference)
            except AssertionError as error:
                failures.append(
                    f"{fmt}: resumed frame differs from the uninterrupted one: {str(error)[:200]}"
                )
            if lost or extra or duplicated or corrupted or stale:
                failures.append(
                    f"{fmt}: {lost} lost, {extra} unexpected, {duplicated} "
                    f"duplicated, {corrupted} corrupted rows, stale {stale}"
                )
            if unverified_files(out) or len(run_files(out)) != len(grid()):
                failures.append(f"{fmt}: run files do not all match their records")
            rows_checked += len(resumed)
            for spec in grid():  # records name every run
                if not (out / f"{spec.key}.{fmt}.json").is_file():
                    failures.append(f"{fmt}: no record for {spec.key}")
            totals = {
                "lost": lost,
                "duplicated": duplicated,
                "corrupted": corrupted,
                "stale": len(stale),
            }
            kills[-1]["totals"] = totals
    finally:
        if holder is not None:
            holder.cleanup()
    effective = sum(1 for k in kills if k["killed"])
    lost = sum(k.get("totals", {}).get("lost", 0) for k in kills)
    duplicated = sum(k.get("totals", {}).get("duplicated", 0) for k in kills)
    corrupted = sum(k.get("totals", {}).get("corrupted", 0) for k in kills)
    stale = sum(k.get("totals", {}).get("stale", 0) for k in kills)
    mid_write = sum(1 for k in kills if k["point"] == "mid-write" and k["killed"])
    print(
        f"interrupt_sweeps: {effective}/{len(kills)} SIGKILLs landed "
        f"({mid_write} mid-write, CSV and Parquet, serial and loky) + "
        f"{repaired['damaged']} truncated files; {rows_checked} rows of "
        f"{2 * len(grid())} runs checked after resume: {lost} lost, {duplicated} duplicated, "
        f"{corrupted} corrupted, {stale} stale temp files "
        f"({repaired['temporaries']} left by kills, removed on resume); "
        f"{'OK' if not failures else 'FAILED'} in {time.perf_counter() - start:.0f} s"
    )
    for failure in failures:
        print(f"  FAILED: {failure}")
    if effective < len(kills):
        print(f"  note: {len(kills) - effective} kill(s) found the sweep already finished")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
