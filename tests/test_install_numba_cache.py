"""Numba's cache of the compiled kernels lives in a user cache directory, never in the package.

Files Numba writes into an installed ``site-packages/bam_rl/kernels/__pycache__`` outlive
``pip uninstall`` and leave an empty ``bam_rl`` namespace package that hides a later editable
install (issue 38). Each check runs in a fresh interpreter, as a user's first call would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bam_rl

PACKAGE = Path(bam_rl.__file__).resolve().parent

# one call into each kernel module; numba is imported first, as a user's own code might
RUN_KERNELS = """
import numba
import numpy as np
from bam_rl.bocd import ChangepointDetector
from bam_rl.families import BetaBinomial
from bam_rl.kernels import bandits, readout
from bam_rl.kernels._cache import cache_dir

assert 0.0 < bandits.kl_bernoulli(0.2, 0.5) < 1.0
assert numba.config.CACHE_DIR == {expected_config!r}, numba.config.CACHE_DIR
print(cache_dir())
"""
# the other two kernel modules as well (their first compilation takes some seconds)
RUN_ALL_KERNELS = (
    RUN_KERNELS
    + """
m = BetaBinomial()
d = ChangepointDetector(m, 0.1)
for _ in range(5):
    d.update(m.stats(successes=1, trials=2))
assert d.map_run_length == 5
total = readout.sequential_sum(np.zeros(2), np.ones((3, 2)), np.array([0, 2]))
assert total.tolist() == [2.0, 2.0]
"""
)


def _numba_files(root: Path) -> dict[Path, int]:
    """Numba's index and data files under ``root`` with their modification times."""
    found: dict[Path, int] = {}
    for pattern in ("*.nbi", "*.nbc"):
        for path in root.rglob(pattern):
            found[path] = path.stat().st_mtime_ns
    return found


def _run(env_changes: dict[str, str], expected_config: str = "", code: str = RUN_KERNELS) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(env_changes)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # Python's own bytecode is not the question here
    code = code.format(expected_config=expected_config)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_kernels_cache_in_the_user_cache_dir_and_write_nothing_in_the_package(tmp_path):
    before = _numba_files(PACKAGE)
    printed = _run({"XDG_CACHE_HOME": str(tmp_path)}, code=RUN_ALL_KERNELS)
    assert printed == str(tmp_path / "bam-rl" / "numba")
    assert _numba_files(PACKAGE) == before  # nothing new, nothing rewritten
    cached = {p.name.split("-")[0] for p in _numba_files(tmp_path)}
    assert {"bocd.step", "bandits.kl_bernoulli", "readout.sequential_sum"} <= cached


def test_numba_cache_dir_is_respected(tmp_path):
    before = _numba_files(PACKAGE)
    chosen = tmp_path / "chosen"
    printed = _run(
        {"NUMBA_CACHE_DIR": str(chosen), "XDG_CACHE_HOME": str(tmp_path / "xdg")},
        expected_config=str(chosen),
    )
    assert printed == str(chosen)
    assert _numba_files(chosen)
    assert not (tmp_path / "xdg").exists()
    assert _numba_files(PACKAGE) == before


@pytest.mark.skipif(sys.platform == "win32", reason="uses /proc as an uncreatable directory")
def test_no_writable_cache_dir_compiles_without_a_cache(tmp_path):
    before = _numba_files(PACKAGE)
    printed = _run(
        {"NUMBA_CACHE_DIR": "/proc/bam_rl_numba", "XDG_CACHE_HOME": "/proc/bam_rl_xdg"},
        expected_config="/proc/bam_rl_numba",
    )
    assert printed == "None"
    assert _numba_files(PACKAGE) == before
