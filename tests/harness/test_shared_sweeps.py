"""Sweeps that many processes share (issue 26): claims, take-overs, shards.

Reproducer on main before: two or three ``bam-rl run … --out SAME`` processes on one grid
died with ``FileNotFoundError`` on another process's temporary file, and nothing said which
runs were computed twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bam_rl.cli import main
from bam_rl.harness.claims import ClaimBook
from bam_rl.harness.sweeps import make_grid, run_many, shard

GRID = [
    "run", "--env", "bam_rl/SwitchingBandit-v0", "--agent", "ucb,random,thompson",
    "--steps", "300", "--seeds", "4", "--no-progress", "--backend", "serial", "--format", "csv",
]  # fmt: skip


def _run_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _start(out: Path, *extra: str) -> subprocess.Popen[str]:
    code = "import sys; from bam_rl.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen(
        [sys.executable, "-c", code, *GRID, "--out", str(out), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _counts(stdout: str) -> tuple[int, int, int]:
    line = stdout.strip().splitlines()[-1]
    numbers = [int(word) for word in line.replace(",", " ").split() if word.isdigit()]
    return numbers[-3], numbers[-2], numbers[-1]  # computed here, loaded, by others


@pytest.fixture(scope="module")
def serial(tmp_path_factory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("serial")
    assert main([*GRID, "--out", str(out)]) == 0
    return _run_files(out)


def test_three_processes_share_one_folder(tmp_path, serial):
    for attempt in range(2):
        out = tmp_path / f"shared{attempt}"
        processes = [_start(out) for _ in range(3)]
        outputs = [p.communicate(timeout=300) for p in processes]
        assert [p.returncode for p in processes] == [0, 0, 0], outputs
        assert all("Traceback" not in err for _, err in outputs)
        computed = [_counts(out_text)[0] for out_text, _ in outputs]
        assert sum(computed) == len(serial) // 2  # each run once (a file and its record)
        assert _run_files(out) == serial  # byte for byte
        assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
        assert not (out / ".claims").exists()  # the last process removed the empty folder


def test_a_killed_worker_is_restarted_and_its_claims_taken_over(tmp_path, serial):
    out = tmp_path / "killed"
    slow = ["--agent-kwargs", "{}"]
    victim = _start(out, *slow)
    others = [_start(out) for _ in range(2)]
    deadline = time.monotonic() + 60
    claims = out / ".claims"
    while time.monotonic() < deadline and not (claims.is_dir() and list(claims.iterdir())):
        time.sleep(0.05)
    os.kill(victim.pid, signal.SIGKILL)  # mid-sweep: it may hold a claim
    victim.communicate()
    for process in others:
        assert process.wait(timeout=300) == 0
    restarted = _start(out)
    assert restarted.wait(timeout=300) == 0
    assert _run_files(out) == serial
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def test_a_dead_holder_on_this_host_is_stale_and_taken_over_once(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    book = ClaimBook(tmp_path)
    book.folder.mkdir()
    path = book.folder / "k.claim"
    record = {"host": book.host, "pid": int(dead.stdout), "token": "x", "time": time.time()}
    path.write_text(json.dumps(record))
    assert book.is_stale(book.read("k"))
    assert book.try_claim("k") and book.taken_over == ["k"]
    other = ClaimBook(tmp_path)
    assert not other.try_claim("k")  # held by a live process now
    book.release("k")
    assert other.try_claim("k")
    other.release_all()


def test_an_old_claim_from_another_host_is_stale(tmp_path, monkeypatch):
    monkeypatch.setenv("BAM_RL_CLAIM_TIMEOUT", "30")
    book = ClaimBook(tmp_path)
    book.folder.mkdir()
    record = {"host": "elsewhere", "pid": 1, "token": "y", "time": time.time()}
    (book.folder / "k.claim").write_text(json.dumps(record))
    assert not book.is_stale(book.read("k"))
    record["time"] = time.time() - 31
    (book.folder / "k.claim").write_text(json.dumps(record))
    assert book.is_stale(book.read("k"))
    monkeypatch.setenv("BAM_RL_CLAIM_TIMEOUT", "1")
    with pytest.raises(ValueError, match="BAM_RL_CLAIM_TIMEOUT"):
        ClaimBook(tmp_path)


def test_two_shards_make_the_whole_grid(tmp_path, serial):
    for index in (0, 1):
        assert main([*GRID, "--out", str(tmp_path / "sharded"), "--shard", f"{index}/2"]) == 0
    assert _run_files(tmp_path / "sharded") == serial
    grid = make_grid(["ucb"], {"b": "bam_rl/SwitchingBandit-v0"}, 5, n_steps=10)
    assert sorted(s.key for s in shard(grid, 0, 2) + shard(grid, 1, 2)) == sorted(
        s.key for s in grid
    )
    with pytest.raises(ValueError, match="index"):
        shard(grid, 2, 2)


@pytest.mark.parametrize("value", ["2/2", "-1/2", "x", "1/0"])
def test_a_bad_shard_is_a_usage_error(value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*GRID, "--shard", value])
    assert exit_info.value.code == 2 and "--shard" in capsys.readouterr().err


def test_the_api_reports_what_it_computed(tmp_path):
    grid = make_grid(["ucb"], {"b": "bam_rl/SwitchingBandit-v0"}, 2, n_steps=20)
    first = run_many(grid, backend="serial", out_dir=tmp_path, progress=False)
    again = run_many(grid, backend="serial", out_dir=tmp_path, progress=False)
    assert len(first.attrs["sweep"]["computed"]) == 2 and first.attrs["sweep"]["loaded"] == 0
    assert again.attrs["sweep"]["computed"] == [] and again.attrs["sweep"]["loaded"] == 2


def test_an_empty_claim_is_taken_over_after_the_timeout_and_never_written(tmp_path, monkeypatch):
    """A holder killed between creating its claim file and writing it left an empty claim that
    nobody could take over (a killed-sweep test hung on it): claims are now linked into place
    whole, and an unreadable one is stale once untouched for the timeout."""
    monkeypatch.setenv("BAM_RL_CLAIM_TIMEOUT", "30")
    book = ClaimBook(tmp_path)
    book.folder.mkdir()
    empty = book.folder / "k.claim"
    empty.touch()
    assert book.read("k") is None and not book.try_claim("k")  # fresh: maybe being written
    old = time.time() - 31
    os.utime(empty, (old, old))
    assert book.try_claim("k") and book.taken_over == ["k"]
    assert json.loads(empty.read_text())["pid"] == os.getpid()  # a whole record
    stray = book.folder / "j.claim.999.abcd.tmp"  # a writer killed before linking
    stray.write_text("{}")
    os.utime(stray, (old, old))
    book.release_all()
    assert not book.folder.exists()  # released, the stray temporary removed, folder gone


def test_claims_work_without_hard_links(tmp_path, monkeypatch):
    """On a file system without hard links a claim is created with O_EXCL instead."""

    def no_links(*args):
        raise PermissionError("hard links not supported")

    monkeypatch.setattr(os, "link", no_links)
    book, other = ClaimBook(tmp_path), ClaimBook(tmp_path)
    assert book.try_claim("k") and not other.try_claim("k")
    assert json.loads((book.folder / "k.claim").read_text())["token"] == book.held["k"]
    book.release_all()
    assert other.try_claim("k")
    other.release_all()
