"""A resumed sweep verifies the files it trusts (issue 14, item 4)."""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest

import bam_rl.harness.sweeps as sweeps
from bam_rl.harness import make_grid, run_many

BANDIT = "bam_rl/SwitchingBandit-v0"
N_STEPS = 400


def grid():
    return make_grid(
        ["ucb", "random"],
        {"a": (BANDIT, {"config_seed": 0})},
        seeds=2,
        n_steps=N_STEPS,
        root_seed=3,
    )


@pytest.fixture
def executed(monkeypatch):
    keys: list[str] = []
    real = sweeps.execute_run

    def counting(spec):
        keys.append(spec.key)
        return real(spec)

    monkeypatch.setattr(sweeps, "execute_run", counting)
    return keys


@pytest.fixture(scope="module")
def reference():
    return run_many(grid(), backend="serial", progress=False)


def resume(out, fmt):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = run_many(grid(), backend="serial", out_dir=out, progress=False, fmt=fmt)
    return frame, [str(w.message) for w in caught if "recomputing" in str(w.message)]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_truncated_run_file_is_recomputed(tmp_path, executed, reference, fmt):
    run_many(grid(), backend="serial", out_dir=tmp_path, progress=False, fmt=fmt)
    victim = tmp_path / f"{grid()[1].key}.{fmt}"
    raw = victim.read_bytes()
    victim.write_bytes(raw[: len(raw) * 6 // 10])  # the issue truncated a CSV to 100 kB
    executed.clear()
    frame, messages = resume(tmp_path, fmt)
    assert executed == [grid()[1].key]  # only the damaged run
    assert len(messages) == 1 and victim.name in messages[0] and "record" in messages[0]
    assert len(frame) == len(grid()) * N_STEPS
    pd.testing.assert_frame_equal(frame, reference)
    assert victim.read_bytes() == raw  # rewritten whole (the runs are deterministic)


def test_an_edited_file_with_the_right_row_count_is_recomputed(tmp_path, executed, reference):
    run_many(grid(), backend="serial", out_dir=tmp_path, progress=False, fmt="csv")
    victim = tmp_path / f"{grid()[0].key}.csv"
    edited = pd.read_csv(victim)
    edited.loc[5, "reward"] += 1.0
    edited.to_csv(victim, index=False)
    executed.clear()
    frame, messages = resume(tmp_path, "csv")
    assert executed == [grid()[0].key] and "SHA-256" in messages[0]
    pd.testing.assert_frame_equal(frame, reference)


def test_files_without_a_matching_record_are_recomputed(tmp_path, executed, reference):
    run_many(grid(), backend="serial", out_dir=tmp_path, progress=False, fmt="csv")
    first, second, third = (tmp_path / f"{spec.key}.csv" for spec in grid()[:3])
    (tmp_path / f"{first.name}.json").unlink()  # no record
    # another run's file and record under this run's name
    second.write_bytes(third.read_bytes())
    record = json.loads((tmp_path / f"{third.name}.json").read_text())
    (tmp_path / f"{second.name}.json").write_text(json.dumps(record))
    executed.clear()
    frame, messages = resume(tmp_path, "csv")
    assert sorted(executed) == sorted(spec.key for spec in grid()[:2])
    assert len(messages) == 2
    pd.testing.assert_frame_equal(frame, reference)
    _, messages = resume(tmp_path, "csv")  # now everything verifies
    assert messages == [] and len(executed) == 2


def test_stale_temporary_files_are_removed_on_resume(tmp_path, executed, reference):
    run_many(grid()[:2], backend="serial", out_dir=tmp_path, progress=False, fmt="csv")
    key = grid()[2].key
    stale = [
        tmp_path / f".{key}.csv.k3j_x9qz.tmp",
        tmp_path / f".{key}.csv.json.a1b2c3d4.tmp",
        tmp_path / f".{grid()[0].key}.parquet.zz9xq0wr.tmp",
    ]
    for path in stale:
        path.write_text("half a file")
    unrelated = [
        tmp_path / ".notes.txt.abcd1234.tmp",
        tmp_path / f".{key[:-1]}x.csv.ab.tmp",
        tmp_path / "mine.csv",
    ]
    for path in unrelated:
        path.write_text("not ours")
    frame, _ = resume(tmp_path, "csv")
    pd.testing.assert_frame_equal(frame, reference)
    assert not any(path.exists() for path in stale)
    assert all(path.exists() for path in unrelated)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp") and p not in unrelated]


def test_records_are_written_and_describe_their_files(tmp_path):
    run_many(grid(), backend="serial", out_dir=tmp_path, progress=False, fmt="parquet")
    for spec in grid():
        path = tmp_path / f"{spec.key}.parquet"
        record = json.loads((tmp_path / f"{path.name}.json").read_text())
        assert record["rows"] == N_STEPS and record["key"] == spec.key
        assert (record["bytes"], record["sha256"]) == sweeps._digest(path)


def test_switching_format_replaces_the_old_file(tmp_path, reference):
    run_many(grid(), backend="serial", out_dir=tmp_path, progress=False, fmt="parquet")
    victim = tmp_path / f"{grid()[0].key}.parquet"
    victim.write_bytes(b"garbage")
    frame, messages = resume(tmp_path, "csv")
    pd.testing.assert_frame_equal(frame, reference)
    assert len(messages) == 1 and "cannot be read" not in messages[0]
    assert not victim.exists() and (tmp_path / f"{grid()[0].key}.csv").exists()
