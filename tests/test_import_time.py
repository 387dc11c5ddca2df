"""``import bam_rl`` stays light: the heavy SciPy subpackages and Numba load on first use.

The timing itself is ``bam-rl bench --only import`` (a benchmark, not a test: timings on a
shared machine are noisy); these checks pin down what makes it fast, in fresh interpreters.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bam_rl.bench import import_time

#: Loaded on first use only; each was a large share of ``import bam_rl`` when imported eagerly.
DEFERRED = ("scipy.optimize", "scipy.linalg", "scipy.stats", "numba", "pandas", "matplotlib")


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_import_bam_rl_defers_the_heavy_modules():
    loaded = _modules_after("import bam_rl; bam_rl.BAM; bam_rl.select; bam_rl.__version__")
    # some SciPy versions' scipy.special imports scipy.linalg itself: not ours to defer then
    reference = _modules_after(import_time.REFERENCE)
    assert not (loaded - reference) & set(DEFERRED)
    assert "scipy.optimize" not in loaded


def test_import_bam_rl_adds_no_third_party_module_to_the_reference():
    ours = _modules_after("import bam_rl")
    reference = _modules_after(import_time.REFERENCE)
    # the standard library's (importlib.metadata reading the version) and bam_rl's own
    allowed = set(sys.stdlib_module_names) | {"bam_rl"}
    extra = {name for name in ours - reference if name.split(".")[0] not in allowed}
    assert not extra, sorted(extra)


def test_deferred_imports_still_work():
    loaded = _modules_after(
        "import numpy as np\n"
        "from bam_rl import BetaBinomial, Memory, select\n"
        "m = BetaBinomial(1.0, 1.0); mem = Memory()\n"
        "for k in (3, 12, 2): mem.add(m.stats(successes=k, trials=15))\n"
        "r = select(m, mem, m.stats(successes=2, trials=15), method='continuous')\n"
        "assert r.weights.shape == (3,)"
    )
    assert "scipy.optimize" in loaded


def test_the_import_row_names_the_whole_bar():
    ((label, ours, peer, bar, met),) = import_time.import_rows(repeats=1)
    assert "import bam_rl" in label and "scipy.special" in label
    assert ours > 0 and peer > 0
    assert bar == "ours ≤ 1.3× peer (ratio ≥ 0.77)"
    assert met == (ours <= 1.3 * peer)


def test_repeats_must_be_positive():
    with pytest.raises(ValueError, match="repeats"):
        import_time.import_seconds(0)
