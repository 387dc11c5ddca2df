"""Result files of the run layer, written atomically (see :func:`bam_rl._io.atomic_path`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from bam_rl._io import atomic_path

__all__ = ["naming_write_failures", "read_results", "write_frame"]


@contextlib.contextmanager
def naming_write_failures(path: str | os.PathLike[str]) -> Iterator[None]:
    """Re-raises an ``OSError`` of the block (a full disk, a file-size limit, a lost mount) as
    one ``OSError`` whose message names ``path`` and the reason, e.g. ``cannot write
    runs/x.parquet (File too large)``, instead of a writer library's own wording."""
    try:
        yield
    except OSError as error:
        reason = os.strerror(error.errno) if error.errno else str(error)
        failure = OSError(f"cannot write {os.fspath(path)} ({reason})")
        failure.errno = error.errno
        raise failure from error


def write_frame(frame: pd.DataFrame, path: str | os.PathLike[str], fmt: str = "csv") -> None:
    """Writes ``frame`` atomically as CSV or Parquet (without the index).

    Raises:
        ValueError: For an unknown ``fmt``.
        OSError: When the file cannot be written (its message names ``path``); ``path`` is
            then left as it was.
    """
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"fmt must be 'csv' or 'parquet', got {fmt!r}")
    with naming_write_failures(path), atomic_path(path) as temporary:
        if fmt == "parquet":
            frame.to_parquet(temporary, index=False)
        else:
            frame.to_csv(temporary, index=False)


def read_results(
    folder: str | os.PathLike[str] | None, name: str, **read_csv: Any
) -> pd.DataFrame | None:
    """``folder/name`` read as CSV (``read_csv`` passed to :func:`pandas.read_csv`), or
    ``None`` when ``folder`` is ``None`` or the file is missing: what an experiment's
    ``claims`` and ``scale`` read."""
    if folder is None:
        return None
    path = Path(folder) / name
    if not path.is_file():
        return None
    return pd.read_csv(path, **read_csv)
