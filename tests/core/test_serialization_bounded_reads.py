"""The state loader refuses what it should not read, before reading it (issue 39, defect 4).

Reproducers on main before: ``load_object`` of a 3 GiB file, or of ``/dev/zero``, read the
whole file into memory first (MemoryError), and of a FIFO blocked forever. Each case runs in
a subprocess under ``RLIMIT_AS`` and a timeout, so a regression fails instead of eating the
machine's memory or hanging the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bam_rl.serialization import file_size_limit, load_object, save_object

LOAD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from bam_rl.serialization import load_object
try:
    load_object(sys.argv[1])
except ValueError as error:
    print("ValueError:", error)
except BaseException as error:
    print(type(error).__name__, error)
"""


def _load_elsewhere(path: str) -> str:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", LOAD, path], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_huge_file_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.npz"
    with open(big, "wb") as stream:
        stream.truncate(3 << 30)  # sparse: no disk used
    out = _load_elsewhere(str(big))
    assert out.startswith("ValueError:") and "3 GiB" in out and "at most" in out, out


def test_dev_zero_is_refused(tmp_path):
    out = _load_elsewhere("/dev/zero")
    assert out.startswith("ValueError:") and "not a regular file" in out, out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "state.npz"
    os.mkfifo(fifo)
    out = _load_elsewhere(str(fifo))  # timeout=60: a blocked read fails the test
    assert out.startswith("ValueError:") and "not a regular file" in out, out


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not a regular file"):
        load_object(tmp_path)


def test_the_bound_follows_the_memory_budget(tmp_path, monkeypatch):
    path = save_object({"weights": np.zeros(300_000)}, tmp_path / "state")  # 2.4 MB
    assert load_object(path)["weights"].shape == (300_000,)
    monkeypatch.setenv("BAM_RL_MEMORY_BUDGET", str(2 << 20))  # 2 MiB: at most 1 MiB a file
    assert file_size_limit() == 1 << 20
    with pytest.raises(ValueError, match=r"BAM_RL_MEMORY_BUDGET"):
        load_object(path)
    monkeypatch.delenv("BAM_RL_MEMORY_BUDGET")
    # max_bytes bounds the file too (its entries plus the archive's overhead)
    with pytest.raises(ValueError, match="max_bytes"):
        load_object(path, max_bytes=1000)


def test_the_bound_is_checked_on_the_opened_file(tmp_path, monkeypatch):
    import bam_rl.serialization as serialization

    path: Path = save_object({"x": np.arange(10)}, tmp_path / "state")
    monkeypatch.setattr(serialization, "file_size_limit", lambda max_bytes=0: 100)
    with pytest.raises(ValueError, match="at most 100 bytes"):
        load_object(path)
