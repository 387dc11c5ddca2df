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
``BAM_RL_CLAIM_TIMEOUT`` (seconds, in ``[3 * HEARTBEAT, MAX_TIMEOUT]``: it must exceed a few
heartbeats, since a holder stalled longer than it loses its claims).

Whatever a claim says, this process does not wait on it forever: a claim it has seen unchanged
(the same file, size, modification time and bytes) for the timeout, by its own monotonic clock,
is stale too. A live holder rewrites its claim every heartbeat, so only a holder that stopped
is caught by this rule; it is what ends the wait on claims whose own time cannot be trusted
(in the future or NaN, from a host with a wrong clock), on unreadable claims (garbage, a
dangling symlink, a FIFO) and on claims with a modification time in the future. Claims are
read without following symlinks and without blocking. A claim path that is a folder, or a
``.claims`` that is not a folder, is not ours to remove: :class:`ClaimError` names it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import socket
import stat
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["HEARTBEAT", "MAX_TIMEOUT", "STALE_AFTER", "ClaimBook", "ClaimError", "claim_timeout"]

#: Seconds between two refreshes of the claims a process holds.
HEARTBEAT = 10.0
#: Seconds without a refresh after which a claim is stale (default of ``BAM_RL_CLAIM_TIMEOUT``).
STALE_AFTER = 120.0
#: Longest accepted ``BAM_RL_CLAIM_TIMEOUT`` (seconds; a week).
MAX_TIMEOUT = 7 * 24 * 3600.0
CLAIM_DIRECTORY = ".claims"
#: Most bytes of a claim file read (a record is about 100).
_MAX_CLAIM_BYTES = 4096


class ClaimError(OSError):
    """Something that is not a claim sits where a claim or the claims folder belongs."""


def claim_timeout() -> float:
    """The staleness timeout: ``BAM_RL_CLAIM_TIMEOUT`` or :data:`STALE_AFTER`.

    Raises:
        ValueError: If the variable is not a finite number of seconds in
            ``[3 * HEARTBEAT, MAX_TIMEOUT]`` (``1e400`` reads as infinity: refused).
    """
    text = os.environ.get("BAM_RL_CLAIM_TIMEOUT")
    if text is None:
        return STALE_AFTER
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 3 * HEARTBEAT <= value <= MAX_TIMEOUT):
        raise ValueError(
            f"BAM_RL_CLAIM_TIMEOUT must be a finite number of seconds in "
            f"[{3 * HEARTBEAT:g}, {MAX_TIMEOUT:g}], got {text!r}"
        )
    return value


def _read_claim_file(path: Path) -> bytes | None:
    """The bytes of a claim file, or ``None`` when there is none or it is not a regular file
    (a symlink is not followed, a FIFO does not block, a huge file is read only in part)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        handle = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return None
        return os.read(handle, _MAX_CLAIM_BYTES)
    except OSError:
        return None
    finally:
        os.close(handle)


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
        # key -> (what the claim looked like, when this process first saw it so: monotonic)
        self._seen: dict[str, tuple[object, float]] = {}
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
            self._make_folder()
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

    def _make_folder(self) -> None:
        try:
            self.folder.mkdir(exist_ok=True)
        except FileExistsError:
            raise ClaimError(
                f"the claims folder {self.folder} is not a folder (a file is in its place); "
                "remove it, then run again"
            ) from None

    def read(self, key: str) -> dict[str, Any] | None:
        """The claim on ``key`` (``None``: none, one being written or removed, or a file that
        is not a readable claim)."""
        data = _read_claim_file(self._path(key))
        if data is None:
            return None
        try:
            value = json.loads(data)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def _look(self, key: str) -> object | None:
        """What the claim on ``key`` looks like now (file type, inode, size, modification
        time, bytes), ``None`` if there is none. Raises :class:`ClaimError` for a folder."""
        path = self._path(key)
        try:
            status = os.lstat(path)
        except FileNotFoundError:
            return None
        if stat.S_ISDIR(status.st_mode):
            raise ClaimError(
                f"{path} is a folder, not a claim file; remove it (only bam-rl sweeps should "
                f"write into {self.folder}), then run again"
            )
        look = (status.st_mode, status.st_ino, status.st_size, status.st_mtime_ns)
        return (*look, _read_claim_file(path))

    def _unchanged_for_timeout(self, key: str, look: object) -> bool:
        """Whether this process has seen the claim on ``key`` exactly as ``look`` for longer
        than the timeout, by its own monotonic clock (whatever the claim says)."""
        now = time.monotonic()
        seen = self._seen.get(key)
        if seen is None or seen[0] != look:
            self._seen[key] = (look, now)
            return False
        return now - seen[1] > self.timeout

    def is_stale(self, claim: dict[str, Any] | None) -> bool:
        """Whether a claim may be taken over (see the module docstring)."""
        if claim is None:
            return False
        if claim.get("host") == self.host and isinstance(claim.get("pid"), int):
            if not _alive_here(claim["pid"]):
                return True
        stamp = claim.get("time")
        # a time in the future or NaN compares False here: try_claim's monotonic rule ends it
        return not isinstance(stamp, (int, float)) or time.time() - stamp > self.timeout

    def try_claim(self, key: str) -> bool:
        """Takes the claim on ``key`` if nobody holds it (or its holder is gone)."""
        path = self._path(key)
        token = secrets.token_hex(8)
        if self._write(path, token, exclusive=True):
            self._hold(key, token)
            return True
        look = self._look(key)
        if look is None:  # released meanwhile: try again at the next look
            return False
        claim = self.read(key)
        # seen unchanged for the timeout: stale, whatever it says (a time in the future or
        # NaN, an unreadable file, a dangling symlink)
        stale = self._unchanged_for_timeout(key, look)
        if claim is None:
            # unreadable (a claim file of an older version killed while writing, or foreign):
            # stale once untouched for the timeout, as a claim whose holder stopped beating
            stale = stale or self._untouched_for_timeout(path)
        else:
            stale = stale or self.is_stale(claim)
        if not stale:
            return False
        # take over: only the process whose rename succeeds may claim afresh
        tomb = path.with_name(f"{path.name}.stale.{secrets.token_hex(6)}")
        try:
            os.rename(path, tomb)
        except FileNotFoundError:
            return False
        try:
            tomb.unlink()
        except FileNotFoundError:
            pass
        except OSError:  # a folder put there since we looked: not ours to remove
            with contextlib.suppress(OSError):
                os.rename(tomb, path)
            raise ClaimError(f"{path} is not a claim file; remove it, then run again") from None
        self._seen.pop(key, None)
        if self._write(path, token, exclusive=True):
            self._hold(key, token)
            self.taken_over.append(key)
            return True
        return False

    def _untouched_for_timeout(self, path: Path) -> bool:
        try:
            return time.time() - os.lstat(path).st_mtime > self.timeout
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
