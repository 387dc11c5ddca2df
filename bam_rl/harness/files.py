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
    ``claims`` and ``scale`` read.

    Raises:
        ValueError: When the file is damaged: cut in the middle of a row (every file of
            :func:`write_frame` ends with a line end; pandas would read the cut row's
            remaining fields as missing values), or unreadable as CSV.
    """
    if folder is None:
        return None
    path = Path(folder) / name
    if not path.is_file():
        return None
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size:
            handle.seek(size - 1)
            if handle.read(1) != b"\n":
                raise ValueError(
                    f"{path} is damaged: it ends in the middle of a row (no line end after its "
                    "last row, as when a copy or a write is cut short); rerun the experiment "
                    "that wrote it"
                )
    return pd.read_csv(path, **read_csv)
