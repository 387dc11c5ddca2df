"""Result files of the run layer, written atomically (see :func:`bam_rl._io.atomic_path`)."""

from __future__ import annotations

import os

import pandas as pd

from bam_rl._io import atomic_path

__all__ = ["write_frame"]


def write_frame(frame: pd.DataFrame, path: str | os.PathLike[str], fmt: str = "csv") -> None:
    """Writes ``frame`` atomically as CSV or Parquet (without the index)."""
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"fmt must be 'csv' or 'parquet', got {fmt!r}")
    with atomic_path(path) as temporary:
        if fmt == "parquet":
            frame.to_parquet(temporary, index=False)
        else:
            frame.to_csv(temporary, index=False)
