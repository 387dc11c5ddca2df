"""Atomic file writes: a crash or a kill never leaves a half-written result or checkpoint."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yields a hidden temporary path beside ``path`` to write to.

    When the block finishes, the temporary file replaces ``path`` in one ``os.replace``;
    when it raises, the temporary file is removed and ``path`` is left as it was. Temporary
    names start with ``.`` and end with ``.tmp``, so directory scans can skip them.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
