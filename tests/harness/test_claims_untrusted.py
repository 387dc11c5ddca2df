"""Claims a sweep cannot trust become stale after the timeout (issue 39, defects 1 and 8).

Reproducers on main before: a claim from another host whose time was in the future or NaN,
or a claim that was a dangling symlink, kept every sweep waiting forever (still waiting after
70 s with the timeout at 30 s); a claim path that was a directory, or a ``.claims`` that was
a regular file, ended in an ``OSError`` traceback and left a renamed ``*.claim.stale.*``
folder behind. Here the timeout is shortened (``HEARTBEAT`` patched, ``BAM_RL_CLAIM_TIMEOUT``
set) and a real-time alarm stops a sweep that waits longer than timeout + one heartbeat.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bam_rl.harness import claims, sweeps
from bam_rl.harness.claims import ClaimBook
from bam_rl.harness.sweeps import make_grid, run_many

TIMEOUT = 0.6
HEARTBEAT = 0.15


@pytest.fixture
def short_claims(monkeypatch):
    monkeypatch.setattr(claims, "HEARTBEAT", HEARTBEAT)
    monkeypatch.setattr(sweeps, "WAIT_INTERVAL", 0.05)
    monkeypatch.setenv("BAM_RL_CLAIM_TIMEOUT", str(TIMEOUT))


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    def expired(*_: object) -> None:
        raise TimeoutError(f"still waiting after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _grid():
    return make_grid(["ucb"], {"b": "bam_rl/SwitchingBandit-v0"}, 1, n_steps=20)


def _plant(folder: Path, key: str, kind: str) -> None:
    claims_dir = folder / ".claims"
    claims_dir.mkdir(parents=True)
    path = claims_dir / f"{key}.claim"
    record = {"host": "another-host", "pid": 1, "token": "t"}
    if kind == "future time":
        path.write_text(json.dumps({**record, "time": time.time() + 10**6}))
    elif kind == "NaN time":
        path.write_text(json.dumps({**record, "time": float("nan")}))
    elif kind == "infinite time":
        path.write_text(json.dumps({**record, "time": float("inf")}))
    elif kind == "foreign host":  # a holder on another machine that stopped beating just now
        path.write_text(json.dumps({**record, "time": time.time()}))
    elif kind == "future file time":  # unreadable, its modification time in the future
        path.write_text("garbage")
        future = time.time() + 10**6
        os.utime(path, (future, future))
    elif kind == "dangling symlink":
        path.symlink_to(claims_dir / "nowhere")
    else:  # pragma: no cover
        raise AssertionError(kind)


KINDS = [
    "future time",
    "NaN time",
    "infinite time",
    "foreign host",
    "future file time",
    "dangling symlink",
]


@pytest.mark.parametrize("kind", KINDS)
def test_an_untrusted_claim_is_taken_over_after_the_timeout(kind, tmp_path, short_claims):
    grid = _grid()
    _plant(tmp_path, grid[0].key, kind)
    start = time.monotonic()
    with _deadline(TIMEOUT + HEARTBEAT + 5.0):  # + 5 s: the run itself and a loaded machine
        frame = run_many(grid, backend="serial", out_dir=tmp_path, progress=False)
    waited = time.monotonic() - start
    assert waited >= TIMEOUT  # it did wait for the holder first
    assert frame.attrs["sweep"]["taken_over"] == [grid[0].key]
    assert len(frame) == 20
    assert not (tmp_path / ".claims").exists()  # nothing left behind


def test_a_beating_claim_with_a_future_time_is_not_taken_over(tmp_path, short_claims):
    """The holder's clock is wrong, but it refreshes its claim: it is alive, never stale."""
    book = ClaimBook(tmp_path)
    book.folder.mkdir()
    path = book.folder / "k.claim"
    for beat in range(int(3 * TIMEOUT / 0.1)):
        record = {"host": "another-host", "pid": 1, "token": "t", "time": 1e12 + beat}
        path.write_text(json.dumps(record))
        assert not book.try_claim("k")
        time.sleep(0.1)
    time.sleep(TIMEOUT + 0.1)  # then it stops beating
    assert book.try_claim("k")
    book.release_all()


def test_a_claim_that_is_a_directory_is_one_clear_error_and_nothing_is_left(tmp_path, short_claims):
    grid = _grid()
    claim = tmp_path / ".claims" / f"{grid[0].key}.claim"
    claim.mkdir(parents=True)
    (claim / "inside").write_text("x")
    with _deadline(TIMEOUT + HEARTBEAT + 5.0), pytest.raises(OSError, match="not a claim file"):
        run_many(grid, backend="serial", out_dir=tmp_path, progress=False)
    left = sorted(p.name for p in (tmp_path / ".claims").iterdir())
    assert left == [claim.name]  # untouched: no renamed *.claim.stale.* folder
    assert (claim / "inside").read_text() == "x"


def test_a_claims_folder_that_is_a_file_is_one_clear_error(tmp_path, short_claims):
    (tmp_path / ".claims").write_text("not a folder")
    with pytest.raises(OSError, match=r"\.claims.*not a folder"):
        run_many(_grid(), backend="serial", out_dir=tmp_path, progress=False)
    assert (tmp_path / ".claims").read_text() == "not a folder"
    assert not [p for p in tmp_path.iterdir() if p.name != ".claims"]


def test_claim_timeout_must_be_finite(monkeypatch):
    for text in ("1e400", "inf", "nan", "-5", "x", "1"):
        monkeypatch.setenv("BAM_RL_CLAIM_TIMEOUT", text)
        with pytest.raises(ValueError, match=r"BAM_RL_CLAIM_TIMEOUT.*\[30, "):
            claims.claim_timeout()
    monkeypatch.setenv("BAM_RL_CLAIM_TIMEOUT", "45")
    assert claims.claim_timeout() == 45.0
