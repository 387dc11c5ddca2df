"""Atomic file writes: a crash or a kill never leaves a half-written result or checkpoint."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "current_umask"]

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's file-mode creation mask (e.g. ``0o022``).

    Read from ``/proc/self/status`` where the kernel reports it (Linux >= 4.7), which leaves
    the mask untouched; elsewhere it is read with ``os.umask`` (set and restored at once,
    under a lock).
    """
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yields a hidden temporary path beside ``path`` to write to.

    When the block finishes, the temporary file replaces ``path`` in one ``os.replace``;
    when it raises, the temporary file is removed and ``path`` is left as it was. Temporary
    names start with ``.`` and end with ``.tmp`` (``.<name>.<random>.tmp``), so directory
    scans can skip them.

    Permissions: the file gets the mode a plain ``open(path, "w")`` would give it — the
    permission bits of the file it replaces, or for a new file ``0o666`` minus the process's
    umask (so results on a shared drive are as readable as any other file written there).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~current_umask()
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    temporary = Path(name)
    try:
        os.close(handle)
        os.chmod(temporary, mode)  # mkstemp creates the file with mode 0600
        yield temporary
        if stat.S_IMODE(temporary.stat().st_mode) != mode:  # the writer replaced the file
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
