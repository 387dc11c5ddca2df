"""Claims on a sweep's output folder, so that many processes and machines can share it.

Before computing a run, a sweep takes a *claim* on its key: the file
``out_dir/.claims/<key>.claim``, created exclusively (a hard link, atomic on local file
systems and on NFS v3+), holding who took it (host, pid, a random token, the time). Only the
holder computes the run and writes its file; everyone else skips it, and at the end waits for
it to appear. When the holder's run file is written, the claim is removed.

A claim is written whole: the record goes to a temporary file that is hard-linked into place
(``os.link`` fails if the claim exists), so a holder killed mid-way never leaves an empty claim;
an unreadable claim (a file system without hard links, an older version) is stale once
untouched for the timeout. A holder keeps its claims alive: a daemon thread rewrites the time
in each held claim (replacing the file whole) every :data:`HEARTBEAT` seconds. A claim is
*stale*, and may be taken over, when its holder is a dead process on this host, or when it was
not refreshed for :data:`STALE_AFTER` seconds (the holder died on another machine, or lost the
file system). Taking over renames the stale claim to a unique name first, which only one
process can do, then claims afresh. The timeout can be changed with the environment variable
``BAM_RL_CLAIM_TIMEOUT`` (seconds; it must exceed a few heartbeats: a holder stalled longer
than it loses its claims).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["HEARTBEAT", "STALE_AFTER", "ClaimBook", "claim_timeout"]

#: Seconds between two refreshes of the claims a process holds.
HEARTBEAT = 10.0
#: Seconds without a refresh after which a claim is stale (default of ``BAM_RL_CLAIM_TIMEOUT``).
STALE_AFTER = 120.0
CLAIM_DIRECTORY = ".claims"


def claim_timeout() -> float:
    """The staleness timeout: ``BAM_RL_CLAIM_TIMEOUT`` or :data:`STALE_AFTER`.

    Raises:
        ValueError: If the variable is not a number of at least three heartbeats.
    """
    text = os.environ.get("BAM_RL_CLAIM_TIMEOUT")
    if text is None:
        return STALE_AFTER
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 3 * HEARTBEAT:
        raise ValueError(
            f"BAM_RL_CLAIM_TIMEOUT must be a number of seconds >= {3 * HEARTBEAT:g}, got {text!r}"
        )
    return value


def _alive_here(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _link_or_create(temporary: Path, path: Path, record: dict[str, Any]) -> None:
    """Puts a claim in place exclusively: a hard link of the whole record (atomic), or on a
    file system without hard links an ``O_EXCL`` create and write (a writer killed in between
    leaves an empty claim, stale after the timeout). Raises ``FileExistsError`` if claimed."""
    try:
        os.link(temporary, path)
    except FileExistsError:
        raise
    except OSError:  # no hard links here (e.g. some FUSE or FAT mounts)
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(handle, "w") as stream:
            stream.write(json.dumps(record))


class ClaimBook:
    """The claims one process holds in one output folder.

    Args:
        directory: The sweep's output folder (claims live in its ``.claims/``).
        heartbeat: Seconds between refreshes of held claims.
    """

    def __init__(self, directory: Path, heartbeat: float = HEARTBEAT):
        self.folder = Path(directory) / CLAIM_DIRECTORY
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.timeout = claim_timeout()
        self.heartbeat = heartbeat
        self.held: dict[str, str] = {}  # key -> token
        self.taken_over: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ claims
    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.claim"

    def _write(self, path: Path, token: str, exclusive: bool) -> bool:
        """Writes a claim whole or not at all: the record goes to a private temporary file,
        then ``os.link`` (exclusive: fails if a claim exists) or ``os.replace`` (a heartbeat)
        puts it in place, so no process ever sees a half-written or empty claim, even when the
        writer is killed mid-way."""
        record = {"host": self.host, "pid": self.pid, "token": token, "time": time.time()}
        for attempt in range(5):  # the last process of a sweep removes the empty folder
            self.folder.mkdir(exist_ok=True)
            temporary = path.with_name(f"{path.name}.{self.pid}.{secrets.token_hex(4)}.tmp")
            try:
                temporary.write_text(json.dumps(record))
                try:
                    if exclusive:
                        _link_or_create(temporary, path, record)
                    else:
                        os.replace(temporary, path)
                finally:
                    with contextlib.suppress(FileNotFoundError):
                        temporary.unlink()
                return True
            except FileExistsError:
                return False
            except FileNotFoundError:  # removed between mkdir and write: make it again
                if attempt == 4:
                    raise
        return False  # pragma: no cover - the loop returns or raises

    def read(self, key: str) -> dict[str, Any] | None:
        """The claim on ``key`` (``None``: none, or one being written or removed)."""
        try:
            value = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def is_stale(self, claim: dict[str, Any] | None) -> bool:
        """Whether a claim may be taken over (see the module docstring)."""
        if claim is None:
            return False
        if claim.get("host") == self.host and isinstance(claim.get("pid"), int):
            if not _alive_here(claim["pid"]):
                return True
        stamp = claim.get("time")
        return not isinstance(stamp, (int, float)) or time.time() - stamp > self.timeout

    def try_claim(self, key: str) -> bool:
        """Takes the claim on ``key`` if nobody holds it (or its holder is gone)."""
        path = self._path(key)
        token = secrets.token_hex(8)
        if self._write(path, token, exclusive=True):
            self._hold(key, token)
            return True
        claim = self.read(key)
        if claim is None:
            # unreadable (a claim file of an older version killed while writing, or foreign):
            # stale once untouched for the timeout, as a claim whose holder stopped beating
            if not self._untouched_for_timeout(path):
                return False
        elif not self.is_stale(claim):
            return False
        # take over: only the process whose rename succeeds may claim afresh
        tomb = path.with_name(f"{path.name}.stale.{secrets.token_hex(6)}")
        try:
            os.rename(path, tomb)
        except FileNotFoundError:
            return False
        with contextlib.suppress(FileNotFoundError):
            tomb.unlink()
        if self._write(path, token, exclusive=True):
            self._hold(key, token)
            self.taken_over.append(key)
            return True
        return False

    def _untouched_for_timeout(self, path: Path) -> bool:
        try:
            return time.time() - path.stat().st_mtime > self.timeout
        except FileNotFoundError:
            return False

    def _hold(self, key: str, token: str) -> None:
        with self._lock:
            self.held[key] = token
        self._start_heartbeat()

    def release(self, key: str) -> None:
        """Gives the claim on ``key`` back (after its run file is written)."""
        with self._lock:
            token = self.held.pop(key, None)
        claim = self.read(key)
        if token is not None and claim is not None and claim.get("token") == token:
            with contextlib.suppress(FileNotFoundError):
                self._path(key).unlink()

    def release_all(self) -> None:
        """Releases every held claim, stops the heartbeat and removes the claims folder
        when no claim is left in it (a finished sweep leaves its output folder clean)."""
        for key in list(self.held):
            self.release(key)
        self._stop.set()
        # temporaries of writers killed between writing and linking, once surely abandoned
        for temporary in self.folder.glob("*.tmp") if self.folder.is_dir() else ():
            if self._untouched_for_timeout(temporary):
                with contextlib.suppress(FileNotFoundError):
                    temporary.unlink()
        with contextlib.suppress(OSError):  # not empty: other processes hold claims
            self.folder.rmdir()

    # --------------------------------------------------------------- heartbeat
    def _start_heartbeat(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._beat, name="bam-rl-claims", daemon=True)
            self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat):
            with self._lock:
                held = dict(self.held)
            for key, token in held.items():
                claim = self.read(key)
                if claim is not None and claim.get("token") == token:  # still ours
                    with contextlib.suppress(OSError):
                        self._write(self._path(key), token, exclusive=False)

    def __enter__(self) -> ClaimBook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release_all()
