"""The compiled BOCD recursion (bam_rl.kernels.bocd) against the NumPy one (issue 23).

The NumPy path of :class:`ChangepointDetector` is the literal reference: with the kernel
switched off every scalar family runs it, and both must give the same run-length posterior,
beliefs and evidence (to 1e-10 relative; bitwise but for the Beta-Binomial ratio path's
rounding), with the cap's tail row and threshold pruning on and off.
"""

from __future__ import annotations

import numpy as np
import pytest

from bam_rl import bocd as bocd_module
from bam_rl.bocd import ChangepointDetector
from bam_rl.families import BetaBinomial, GammaPoisson, NormalGamma, NormalKnownVariance
from bam_rl.families.base import stack


def _stream(model, rng, n):
    if isinstance(model, BetaBinomial):
        p = np.repeat(rng.uniform(0.1, 0.9, n // 50 + 1), 50)[:n]
        return [model.stats(successes=int(rng.binomial(10, q)), trials=10) for q in p]
    if isinstance(model, GammaPoisson):
        lam = np.repeat(rng.uniform(0.5, 8, n // 50 + 1), 50)[:n]
        return [model.stats(rng.poisson(lam_i, size=3)) for lam_i in lam]
    mean = np.repeat(rng.normal(0, 3, n // 50 + 1), 50)[:n]
    return [model.stats([rng.normal(m, 1.0)]) for m in mean]


MODELS = [
    NormalKnownVariance(0.0, 4.0, 1.0),
    NormalGamma(),
    BetaBinomial(1.0, 1.0),
    GammaPoisson(1.0, 1.0),
]


def _state(detector):
    return (
        detector.run_lengths.copy(),
        detector.log_run_length_probabilities.copy(),
        {k: v.copy() for k, v in detector.beliefs.fields.items()},
        detector.log_evidence,
    )


@pytest.mark.parametrize("model", MODELS, ids=lambda m: type(m).__name__)
@pytest.mark.parametrize(("cap", "threshold"), [(None, 0.0), (30, 0.0), (30, 1e-6), (None, 1e-4)])
def test_compiled_steps_equal_the_numpy_reference(model, cap, threshold, monkeypatch):
    rng = np.random.default_rng(0)
    data = _stream(model, rng, 300)
    compiled = ChangepointDetector(model, 1 / 40, prune_threshold=threshold, max_run_length=cap)
    for s in data:
        compiled.update(s)
    monkeypatch.setattr(bocd_module, "_kernel_kind", lambda model: None)
    reference = ChangepointDetector(model, 1 / 40, prune_threshold=threshold, max_run_length=cap)
    for s in data:
        reference.update(s)
    (runs_c, post_c, fields_c, ev_c), (runs_r, post_r, fields_r, ev_r) = (
        _state(compiled),
        _state(reference),
    )
    np.testing.assert_array_equal(runs_c, runs_r)
    np.testing.assert_allclose(post_c, post_r, rtol=1e-10, atol=1e-12)
    for name in fields_r:
        np.testing.assert_allclose(fields_c[name], fields_r[name], rtol=1e-10)
    assert ev_c == pytest.approx(ev_r, rel=1e-10)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: type(m).__name__)
def test_run_over_a_stream_equals_one_update_per_datum(model):
    data = _stream(model, np.random.default_rng(1), 400)
    stacked = stack(data)
    batch = ChangepointDetector(model, 1 / 40, max_run_length=25)
    maps, increments = batch.run(stacked)
    steps = ChangepointDetector(model, 1 / 40, max_run_length=25)
    want_maps, want_increments = [], []
    for s in data:
        steps.update(s)
        want_maps.append(steps.map_run_length)
        want_increments.append(steps.last_log_predictive)
    np.testing.assert_array_equal(maps, want_maps)
    np.testing.assert_allclose(increments, want_increments, rtol=1e-12)
    np.testing.assert_array_equal(batch.run_lengths, steps.run_lengths)
    assert batch.log_evidence == steps.log_evidence and batch.t == steps.t == 400


def test_errors_come_from_the_numpy_path():
    """A step the kernel cannot finish (here an overflow) is replayed on the NumPy path, which
    raises the family's error and leaves the detector as it was."""
    model = BetaBinomial()
    detector = ChangepointDetector(model, 1 / 40)
    detector.update(model.stats(successes=3, trials=5))
    before = _state(detector)
    with pytest.raises(ValueError, match="overflow"):
        detector.update(model.stats(successes=1e308, trials=1.5e308))
    after = _state(detector)
    np.testing.assert_array_equal(after[0], before[0])
    np.testing.assert_array_equal(after[1], before[1])
    assert detector.t == 1


def test_importing_bam_rl_compiles_nothing():
    import subprocess
    import sys

    code = "import sys, bam_rl, bam_rl.bocd; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_an_unwritable_numba_cache_breaks_nothing():
    import os
    import subprocess
    import sys

    code = (
        "from bam_rl.bocd import ChangepointDetector; from bam_rl.families import BetaBinomial\n"
        "m = BetaBinomial(); d = ChangepointDetector(m, 0.1)\n"
        "for _ in range(5): d.update(m.stats(successes=1, trials=2))\n"
        "print(d.map_run_length)"
    )
    env = dict(os.environ, NUMBA_CACHE_DIR="/proc/bam_rl_numba_cache")  # cannot be created
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "5"


def test_a_zero_precision_is_the_numpy_path_value_error_not_a_zero_division():
    """Hypothesis found it: a hand-built datum of precision -1 on a prior of precision 1 makes
    a belief of precision 0; compiled code raises ZeroDivisionError where NumPy gives inf, so
    the kernel's callers hand the step to the NumPy path, which refuses it as before."""
    from bam_rl.families import NaturalParams

    model = NormalKnownVariance(0.0, 1.0, 1.0)
    bad = NaturalParams(model, {"precision_mean": -1.0, "precision": -1.0})
    for use_run in (False, True):
        detector = ChangepointDetector(model, 0.1)
        detector.update(model.stats(np.array([0.0])))
        before = (detector.t, detector.run_lengths.tolist(), detector.log_evidence)
        with pytest.raises(ValueError):
            if use_run:
                detector.run(stack([bad]))
            else:
                detector.update(bad)
        assert (detector.t, detector.run_lengths.tolist(), detector.log_evidence) == before


def test_bernoulli_ratio_path_equals_the_numpy_reference_on_a_long_stream(monkeypatch):
    """Bernoulli data take the kernel's lgamma-free path (one product of ratios and one log
    per run length), whose log-partitions are carried by addition: over 3000 data in long
    stationary stretches (no pruning, thousands of live run lengths) the posterior and the
    evidence still agree with the NumPy path's lgamma differences."""
    model = BetaBinomial(1.0, 1.0)
    rng = np.random.default_rng(5)
    p = np.repeat([0.8, 0.2, 0.6], 1000)
    data = [model.stats(successes=int(y), trials=1) for y in rng.random(p.size) < p]
    compiled = ChangepointDetector(model, 1 / 1000, prune_threshold=0.0)
    for s in data:
        compiled.update(s)
    monkeypatch.setattr(bocd_module, "_kernel_kind", lambda model: None)
    reference = ChangepointDetector(model, 1 / 1000, prune_threshold=0.0)
    for s in data:
        reference.update(s)
    assert len(compiled.run_lengths) > 1000
    np.testing.assert_array_equal(compiled.run_lengths, reference.run_lengths)
    np.testing.assert_allclose(
        compiled.log_run_length_probabilities,
        reference.log_run_length_probabilities,
        rtol=1e-10,
        atol=1e-9,
    )
    assert compiled.log_evidence == pytest.approx(reference.log_evidence, rel=1e-12)


def test_the_ratio_path_hands_an_underflow_to_lgamma():
    """A product of ratios below 1e-280 (here a prior alpha of 1e-300 and a success) is not
    logged: that row takes the lgamma formula, which is finite."""
    from bam_rl.kernels.bocd import _beta_binomial_log_ratio

    assert np.isnan(_beta_binomial_log_ratio(1e-300, 1.0, 1.0, 0.0))
    assert _beta_binomial_log_ratio(2.0, 3.0, 1.0, 0.0) == pytest.approx(np.log(2 / 5))
    assert _beta_binomial_log_ratio(2.0, 3.0, 2.0, 1.0) == pytest.approx(
        np.log(2 / 5 * 3 / 6 * 3 / 7)
    )
    model = BetaBinomial(1e-300, 1.0)
    detector = ChangepointDetector(model, 0.1)
    detector.update(model.stats(successes=1, trials=1))
    assert np.isfinite(detector.log_evidence)
    assert detector.log_evidence == pytest.approx(np.log(1e-300 / (1e-300 + 1.0)))
