"""Atomic writes: a failed write leaves the previous file and no temporary behind."""

from __future__ import annotations

import pandas as pd
import pytest

from bam_rl._io import atomic_path
from bam_rl.harness.files import write_frame


def test_failed_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "results.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as temporary:
        temporary.write_text("half")
        raise RuntimeError("killed mid-write")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.csv"]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_write_frame_round_trips(tmp_path, fmt):
    frame = pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]})
    path = tmp_path / "sub" / f"frame.{fmt}"
    write_frame(frame, path, fmt)
    read = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)
    pd.testing.assert_frame_equal(read, frame)
    with pytest.raises(ValueError, match="fmt"):
        write_frame(frame, path, "xlsx")
