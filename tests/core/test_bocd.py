"""BOCD against an exhaustive enumeration of segmentations, limiting cases, pruning on a long
stream, invariants (hypothesis) and argument checks.

The oracle enumerates every binary vector ``c`` of "a change right after datum i" indicators,
weighs it by its hazard factors (the hazard read at the run length before each datum) and by
the product of its segments' marginal likelihoods, each computed from the raw data with scipy
(sequential Beta-Binomial predictives, a multivariate normal, a multivariate Student t), so
it shares nothing with the natural-parameter code.
"""

from __future__ import annotations

import copy
import itertools
import math
import time
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from scipy.special import logsumexp

from bam_rl.bocd import ChangepointDetector
from bam_rl.families import (
    BayesianLinearRegression,
    BayesianLinearRegressionNIG,
    BetaBinomial,
    DirichletCategorical,
    GammaPoisson,
    NaturalParams,
    NormalGamma,
    NormalKnownVariance,
)

# ----------------------------------------------------------------------------- the oracle


def enumerate_segmentations(
    n_data: int,
    segment_log_marginal: Callable[[int, int], float],
    hazard: Callable[[int], float],
) -> tuple[float, np.ndarray, list[tuple[float, int, int]]]:
    """Exact BOCD quantities after ``n_data`` data by summing over all change vectors.

    Args:
        n_data: Number of data ``t``.
        segment_log_marginal: ``(start, stop) -> log p(D_start..D_{stop-1})`` under the base
            prior (0-based, half-open).
        hazard: ``H(r)``, the probability of a change right after a datum that arrives when
            the run length is ``r``.

    Returns:
        ``(log p(D_1..t), P(r_t = r) for r = 0..t, terms)``; ``terms`` lists for every change
        vector its log joint, its final run length and the start of the segment holding
        ``D_t``.
    """
    terms = []
    for changes in itertools.product((0, 1), repeat=n_data):
        log_weight = 0.0
        run = 0
        start = 0
        for i, change in enumerate(changes):
            h = hazard(run)
            if change:
                log_weight += math.log(h)
                if i < n_data - 1:  # a change after the last datum splits no data
                    log_weight += segment_log_marginal(start, i + 1)
                    start = i + 1
                run = 0
            else:
                log_weight += math.log1p(-h)
                run += 1
        log_weight += segment_log_marginal(start, n_data)
        terms.append((log_weight, run, start))
    logs = np.array([term[0] for term in terms])
    evidence = logsumexp(logs)
    posterior = np.zeros(n_data + 1)
    for log_weight, run, _ in terms:
        posterior[run] += math.exp(log_weight - evidence)
    return float(evidence), posterior, terms


def cached(function: Callable[[int, int], float]) -> Callable[[int, int], float]:
    table: dict[tuple[int, int], float] = {}

    def wrapper(start: int, stop: int) -> float:
        if (start, stop) not in table:
            table[start, stop] = function(start, stop)
        return table[start, stop]

    return wrapper


def binomial_data(
    rng: np.random.Generator, min_trials: int, max_trials: int, size: int
) -> list[tuple[int, int]]:
    """``size`` pairs ``(successes, trials)``: trials uniform in ``[min_trials, max_trials)``,
    successes uniform in ``[0, trials]``."""
    trials = rng.integers(min_trials, max_trials, size=size)
    successes = np.array([rng.integers(0, n + 1) for n in trials])
    return list(zip(successes.tolist(), trials.tolist(), strict=True))


def beta_binomial_segment(alpha: float, beta: float, data: Sequence[tuple[int, int]]):
    """Sequential predictive product of scipy's beta-binomial pmf over a segment."""

    def log_marginal(start: int, stop: int) -> float:
        a, b, total = alpha, beta, 0.0
        for k, n in data[start:stop]:
            total += sps.betabinom.logpmf(k, n, a, b)
            a, b = a + k, b + n - k
        return total

    return cached(log_marginal)


def normal_known_variance_segment(
    mean: float, var: float, noise_var: float, data: Sequence[np.ndarray]
):
    """Multivariate normal of the concatenated segment: N(mean·1, noise_var·I + var·11ᵀ)."""

    def log_marginal(start: int, stop: int) -> float:
        y = np.concatenate(data[start:stop])
        cov = noise_var * np.eye(len(y)) + var * np.ones((len(y), len(y)))
        return float(sps.multivariate_normal(np.full(len(y), mean), cov).logpdf(y))

    return cached(log_marginal)


def normal_gamma_segment(
    mean: float, kappa: float, alpha: float, beta: float, data: Sequence[np.ndarray]
):
    """Multivariate Student t of the segment: df 2α, shape (β/α)(I + 11ᵀ/κ)."""

    def log_marginal(start: int, stop: int) -> float:
        y = np.concatenate(data[start:stop])
        n = len(y)
        shape = (beta / alpha) * (np.eye(n) + np.ones((n, n)) / kappa)
        return float(sps.multivariate_t(np.full(n, mean), shape, df=2 * alpha).logpdf(y))

    return cached(log_marginal)


def as_hazard_function(hazard) -> Callable[[int], float]:
    if callable(hazard):
        return lambda r: float(np.asarray(hazard(np.array([r])))[0])
    return lambda r: float(hazard)


def check_against_enumeration(model, stats: Sequence[NaturalParams], segment, hazard):
    """At every step of an unpruned detector on ``model``: evidence and the whole run-length
    posterior equal the enumeration."""
    bocd = ChangepointDetector(model, hazard, prune_threshold=0.0)
    hazard_fn = as_hazard_function(hazard)
    for t, s in enumerate(stats, start=1):
        bocd.update(s)
        evidence, posterior, _ = enumerate_segmentations(t, segment, hazard_fn)
        assert bocd.t == t
        np.testing.assert_allclose(bocd.log_evidence, evidence, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(bocd.run_length_posterior, posterior, rtol=1e-9, atol=1e-13)
        np.testing.assert_array_equal(bocd.run_lengths, np.arange(t + 1))


CONSTANT_HAZARDS = [0.5, 0.05, 0.3, 0.9]


def decreasing_hazard(r: np.ndarray) -> np.ndarray:
    return 1.0 / (np.asarray(r) + 2.0)


def step_hazard(r: np.ndarray) -> np.ndarray:
    return np.where(np.asarray(r) < 2, 0.1, 0.6)


HAZARDS = [*CONSTANT_HAZARDS, decreasing_hazard, step_hazard]
HAZARD_IDS = [*map(str, CONSTANT_HAZARDS), "callable-1/(r+2)", "callable-step"]

# ------------------------------------------------------------ the exact numeric example


def test_worked_example_beta_bernoulli():
    """Beta(1,1), hazard ½, data [1, 1]: posterior [1/2, 3/14, 2/7], evidence 7/24."""
    model = BetaBinomial(1.0, 1.0)
    bocd = ChangepointDetector(model, hazard=0.5, prune_threshold=0.0)
    s = model.stats(successes=1, trials=1)
    bocd.update(s)
    np.testing.assert_allclose(bocd.run_length_posterior, [0.5, 0.5], rtol=1e-14)
    np.testing.assert_allclose(math.exp(bocd.log_evidence), 0.5, rtol=1e-14)
    bocd.update(s)
    expected = [float(Fraction(1, 2)), float(Fraction(3, 14)), float(Fraction(2, 7))]
    np.testing.assert_allclose(bocd.run_length_posterior, expected, rtol=1e-13)
    np.testing.assert_allclose(math.exp(bocd.log_evidence), 7 / 24, rtol=1e-13)
    np.testing.assert_allclose(bocd.last_log_predictive, math.log(7 / 12), rtol=1e-13)
    np.testing.assert_array_equal(bocd.run_lengths, [0, 1, 2])
    # sparse pair and point reads
    lengths, probabilities = bocd.run_length_posterior_sparse
    np.testing.assert_array_equal(lengths, [0, 1, 2])
    np.testing.assert_allclose(probabilities, expected, rtol=1e-13)
    assert bocd.changepoint_probability(0) == pytest.approx(0.5, rel=1e-13)
    assert bocd.changepoint_probability() == pytest.approx(3 / 14, rel=1e-13)
    assert bocd.changepoint_probability(2) == pytest.approx(2 / 7, rel=1e-13)
    assert bocd.changepoint_probability(3) == 0.0
    assert bocd.map_run_length == 0
    # beliefs: [prior, prior + s, prior + 2 s]
    beliefs = bocd.beliefs
    np.testing.assert_allclose(beliefs.fields["alpha"], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(beliefs.fields["beta"], [1.0, 1.0, 1.0])
    # filtered: segments of length 1 (weight ½·½) and 2 (weight ½·⅔) -> 3/7, 4/7
    np.testing.assert_allclose(bocd.filtered_weights, [3 / 7, 4 / 7], rtol=1e-13)
    np.testing.assert_array_equal(bocd.filtered_run_lengths, [1, 2])
    mean, var = bocd.theta_moments("filtered")
    means = np.array([2 / 3, 3 / 4])
    variances = np.array([2 / 36, 3 / 80])
    w = np.array([3 / 7, 4 / 7])
    assert mean == pytest.approx(w @ means, rel=1e-13)
    assert var == pytest.approx(w @ (variances + means**2) - (w @ means) ** 2, rel=1e-12)
    assert bocd.map_belief.fields["alpha"] == 3.0
    mean_p, _ = bocd.theta_moments("predictive")
    assert mean_p == pytest.approx(np.dot(expected, [0.5, 2 / 3, 3 / 4]), rel=1e-13)


def test_constant_hazard_fixes_p_r0_and_detection_is_read_at_a_lag():
    model = NormalKnownVariance(0.0, 4.0, 1.0)
    bocd = ChangepointDetector(model, hazard=0.02, prune_threshold=0.0)  # pruning renormalises
    rng = np.random.default_rng(3)
    y = np.concatenate([rng.normal(-2, 1, 40), rng.normal(2, 1, 10)])
    for value in y:
        bocd.update(model.stats([value]))
        assert bocd.changepoint_probability(0) == pytest.approx(0.02, rel=1e-12)
        assert bocd.run_length_posterior[0] == pytest.approx(0.02, rel=1e-12)
    # the change before datum 41 is seen at lag 10 (the current segment holds 10 data)
    assert bocd.map_run_length == 10
    assert bocd.changepoint_probability(10) > 0.5


# ----------------------------------------------------------- exhaustive enumeration


@pytest.mark.parametrize("hazard", HAZARDS, ids=HAZARD_IDS)
def test_beta_binomial_equals_enumeration(hazard):
    rng = np.random.default_rng(11)
    alpha, beta = 1.5, 0.7
    data = binomial_data(rng, 0, 6, 8)
    model = BetaBinomial(alpha, beta)
    stats = [model.stats(k, n) for k, n in data]
    check_against_enumeration(model, stats, beta_binomial_segment(alpha, beta, data), hazard)


@pytest.mark.parametrize("hazard", HAZARDS, ids=HAZARD_IDS)
def test_normal_known_variance_equals_enumeration(hazard):
    rng = np.random.default_rng(12)
    mean, var, noise_var = 0.4, 2.5, 0.7
    # data of 1-3 values each, with a jump in the middle
    data = [rng.normal(-1.0 if i < 4 else 2.0, 1.0, size=rng.integers(1, 4)) for i in range(8)]
    model = NormalKnownVariance(mean, var, noise_var)
    stats = [model.stats(y) for y in data]
    segment = normal_known_variance_segment(mean, var, noise_var, data)
    check_against_enumeration(model, stats, segment, hazard)


@pytest.mark.parametrize("hazard", HAZARDS, ids=HAZARD_IDS)
def test_normal_gamma_equals_enumeration(hazard):
    rng = np.random.default_rng(13)
    mean, kappa, alpha, beta = -0.3, 0.8, 2.0, 1.5
    data = [rng.normal(0.0, 0.5 if i < 5 else 2.0, size=rng.integers(1, 4)) for i in range(8)]
    model = NormalGamma(mean, kappa, alpha, beta)
    stats = [model.stats(y) for y in data]
    segment = normal_gamma_segment(mean, kappa, alpha, beta, data)
    check_against_enumeration(model, stats, segment, hazard)


@pytest.mark.parametrize("hazard", [0.3, decreasing_hazard], ids=["0.3", "callable"])
def test_theta_moments_equal_enumeration(hazard):
    """Filtered (segment holding D_t) and predictive (θ_{t+1}) Beta mixtures by enumeration."""
    rng = np.random.default_rng(14)
    alpha, beta = 2.0, 3.0
    data = binomial_data(rng, 1, 8, 7)
    model = BetaBinomial(alpha, beta)
    bocd = ChangepointDetector(model, hazard, prune_threshold=0.0)
    segment = beta_binomial_segment(alpha, beta, data)
    hazard_fn = as_hazard_function(hazard)
    for t, (k, n) in enumerate(data, start=1):
        bocd.update(model.stats(k, n))
        evidence, _, terms = enumerate_segmentations(t, segment, hazard_fn)
        filtered = np.zeros(2)  # E[θ_t], E[θ_t²]
        predictive = np.zeros(2)
        for log_weight, run, start in terms:
            p = math.exp(log_weight - evidence)
            a = alpha + sum(kk for kk, _ in data[start:t])
            b = beta + sum(nn - kk for kk, nn in data[start:t])
            seg = sps.beta(a, b)
            moments = np.array([seg.mean(), seg.var() + seg.mean() ** 2])
            filtered += p * moments
            prior = sps.beta(alpha, beta)
            predictive += p * (
                moments if run > 0 else np.array([prior.mean(), prior.var() + prior.mean() ** 2])
            )
        for kind, expected in (("filtered", filtered), ("predictive", predictive)):
            mean, var = bocd.theta_moments(kind)
            assert mean == pytest.approx(expected[0], rel=1e-10)
            assert var == pytest.approx(expected[1] - expected[0] ** 2, rel=1e-8)


def test_beliefs_are_prior_plus_recent_statistics():
    rng = np.random.default_rng(15)
    model = NormalGamma(0.0, 1.0, 2.0, 1.0)
    data = [rng.normal(size=2) for _ in range(6)]
    bocd = ChangepointDetector(model, 0.2, prune_threshold=0.0)
    for y in data:
        bocd.update(model.stats(y))
    beliefs = bocd.beliefs
    assert len(beliefs) == 7
    for row, r in enumerate(bocd.run_lengths):
        recent = data[len(data) - r :] if r else []
        expected = model.prior + model.stats(np.concatenate([np.zeros(0), *recent]))
        assert beliefs[row].allclose(expected)
        np.testing.assert_allclose(beliefs.log_h[row], expected.log_h, rtol=1e-12)


# ---------------------------------------------------------------- limiting hazards


@pytest.mark.parametrize("family", ["beta", "normal", "normal-gamma"])
def test_hazard_to_zero_is_recursive_bayes(family):
    rng = np.random.default_rng(16)
    if family == "beta":
        model = BetaBinomial(2.0, 1.0)
        stats = [model.stats(k, 10) for k in rng.integers(0, 11, size=40)]
    elif family == "normal":
        model = NormalKnownVariance(0.0, 3.0, 0.5)
        stats = [model.stats(rng.normal(1.0, 1.0, size=3)) for _ in range(40)]
    else:
        model = NormalGamma(0.0, 1.0, 2.0, 2.0)
        stats = [model.stats(rng.normal(1.0, 2.0, size=3)) for _ in range(40)]
    bocd = ChangepointDetector(model, hazard=1e-12)
    total = model.zeros()
    for s in stats:
        bocd.update(s)
        total = total + s
    posterior = model.prior + total
    assert bocd.log_evidence == pytest.approx(model.log_marginal(model.prior, total), rel=1e-10)
    mean, var = bocd.theta_moments("filtered")
    np.testing.assert_allclose(mean, posterior.mean, rtol=1e-9)
    np.testing.assert_allclose(var, posterior.variance, rtol=1e-6)
    assert bocd.map_belief.allclose(posterior)
    assert bocd.map_run_length == len(stats)


@pytest.mark.parametrize("family", ["beta", "normal"])
def test_hazard_to_one_is_product_of_prior_predictives(family):
    rng = np.random.default_rng(17)
    if family == "beta":
        model = BetaBinomial(2.0, 1.0)
        stats = [model.stats(k, 10) for k in rng.integers(0, 11, size=40)]
    else:
        model = NormalKnownVariance(0.0, 3.0, 0.5)
        stats = [model.stats(rng.normal(1.0, 1.0, size=3)) for _ in range(40)]
    bocd = ChangepointDetector(model, hazard=1 - 1e-12)
    for s in stats:
        bocd.update(s)
    expected = sum(model.log_marginal(model.prior, s) for s in stats)
    assert bocd.log_evidence == pytest.approx(expected, rel=1e-10)
    assert bocd.map_run_length == 0
    mean, _ = bocd.theta_moments("filtered")  # the belief from the latest datum alone
    np.testing.assert_allclose(mean, (model.prior + stats[-1]).mean, rtol=1e-9)


# ------------------------------------------------------------------- long stream


def piecewise_stream(n_steps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Piecewise-constant mean in [-5, 5] (first change at step 1200, then every 1000-3000
    steps), each jump at least 1.5, unit noise. Returns (observations, segment starts)."""
    rng = np.random.default_rng(seed)
    starts, means = [0], [0.0]
    while starts[-1] < n_steps:
        starts.append(starts[-1] + (1200 if len(starts) == 1 else int(rng.integers(1000, 3001))))
        mean = means[-1]
        while abs(mean - means[-1]) < 1.5:
            mean = rng.uniform(-5.0, 5.0)
        means.append(mean)
    mu = np.empty(n_steps)
    for k in range(len(starts) - 1):
        mu[starts[k] : starts[k + 1]] = means[k]
    return mu + rng.normal(size=n_steps), np.array([s for s in starts if s < n_steps])


@pytest.fixture(scope="module")
def long_stream():
    n_steps = 100_000
    y, starts = piecewise_stream(n_steps, seed=2024)
    model = NormalKnownVariance(0.0, 16.0, 1.0)
    batch = model.stats(y, axis=())
    h1, h2, log_h = batch.fields["precision_mean"], batch.fields["precision"], batch.log_h
    stats = [
        NaturalParams(model, {"precision_mean": h1[i], "precision": h2[i]}, log_h[i])
        for i in range(n_steps)
    ]
    return model, stats, starts


def run_stream(
    bocd: ChangepointDetector, stats: Sequence[NaturalParams]
) -> tuple[np.ndarray, np.ndarray, float]:
    """MAP run length and number of live run lengths after each step, and the CPU seconds."""
    maps = np.empty(len(stats), dtype=np.int64)
    live = np.empty(len(stats), dtype=np.int64)
    start = time.process_time()
    for i, s in enumerate(stats):
        bocd.update(s)
        maps[i] = bocd.map_run_length
        live[i] = len(bocd.run_lengths)
    return maps, live, time.process_time() - start


def detected_changes(maps: np.ndarray) -> np.ndarray:
    """Changepoint estimates: the start ``t − r_MAP`` of the MAP segment, at each drop."""
    t = np.arange(1, len(maps) + 1)
    drops = np.flatnonzero(np.diff(maps) < 0) + 1
    return np.unique(t[drops] - maps[drops])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("threshold", "posterior_atol"), [(1e-10, 1e-6), (1e-4, None)], ids=["default-1e-10", "1e-4"]
)
def test_long_stream_pruning(long_stream, threshold, posterior_atol, capsys):
    """100,000 steps: bounded live run lengths, finite, and the unpruned MAP on a prefix.

    With the default threshold every shorter run length inside a long stationary segment
    keeps a mass near hazard × Occam factor (≫ 1e-10), so the live set is bounded by the
    current segment's length (≤ 3000 here), not by t, and the posterior stays within 1e-6 of
    the unpruned one. A threshold of 1e-4 keeps a few dozen run lengths and the same MAP, at
    the price of a visibly coarser posterior (up to ~0.1 absolute on this prefix).
    """
    model, stats, starts = long_stream
    hazard = 1 / 2000
    kwargs = {} if threshold == 1e-10 else {"prune_threshold": threshold}
    bocd = ChangepointDetector(model, hazard, **kwargs)
    maps, live, seconds = run_stream(bocd, stats)
    assert np.isfinite(bocd.log_evidence)
    assert np.all(np.isfinite(bocd.log_run_length_probabilities))
    mean, var = bocd.theta_moments("filtered")
    assert np.isfinite(mean) and np.isfinite(var)
    longest = int(np.diff(np.append(starts, len(stats))).max())
    if threshold == 1e-10:
        assert live.max() <= longest + 200
    else:
        assert live.max() <= 500
    # every true change is found within 50 steps
    found = detected_changes(maps)
    for change in starts[1:]:
        assert np.min(np.abs(found - change)) <= 50

    # the unpruned filter on a 2,000-step prefix (one change at 1200) agrees
    prefix = 2000
    exact = ChangepointDetector(model, hazard, prune_threshold=0.0)
    exact_maps, exact_live, _ = run_stream(exact, stats[:prefix])
    assert exact_live[-1] == prefix + 1
    pruned = ChangepointDetector(model, hazard, **kwargs)
    pruned_maps, _, _ = run_stream(pruned, stats[:prefix])
    np.testing.assert_array_equal(pruned_maps, maps[:prefix])
    np.testing.assert_array_equal(pruned_maps, exact_maps)
    np.testing.assert_array_equal(detected_changes(pruned_maps), detected_changes(exact_maps))
    if posterior_atol is not None:
        dense_exact = exact.run_length_posterior
        dense_pruned = pruned.run_length_posterior
        np.testing.assert_allclose(
            dense_pruned, dense_exact[: len(dense_pruned)], atol=posterior_atol
        )
        assert pruned.log_evidence == pytest.approx(exact.log_evidence, abs=posterior_atol)
    with capsys.disabled():
        print(
            f"\n[bocd 100k, threshold {threshold:g}] live run lengths: max {live.max()}, "
            f"mean {live.mean():.0f}; longest segment {longest}; "
            f"{seconds / len(stats) * 1e6:.1f} µs/step (CPU, incl. reading the MAP)"
        )


# ------------------------------------------------------------------ invariants


@st.composite
def binomial_sequences(draw, max_len: int = 25):
    trials = draw(st.lists(st.integers(0, 12), min_size=0, max_size=max_len))
    return [(draw(st.integers(0, n)), n) for n in trials]


@settings(max_examples=60, deadline=None)
@given(
    data=binomial_sequences(),
    hazard=st.floats(1e-6, 1 - 1e-6),
    threshold=st.sampled_from([0.0, 1e-10, 1e-3, 0.05, 0.4]),
    max_run_length=st.sampled_from([None, 1, 3, 10]),
)
def test_posterior_is_a_distribution(data, hazard, threshold, max_run_length):
    model = BetaBinomial(1.0, 2.0)
    bocd = ChangepointDetector(
        model, hazard, prune_threshold=threshold, max_run_length=max_run_length
    )
    for t, (k, n) in enumerate(data, start=1):
        bocd.update(model.stats(k, n))
        lengths, probabilities = bocd.run_length_posterior_sparse
        assert bocd.t == t
        assert lengths[0] == 0 and np.all(np.diff(lengths) > 0) and lengths[-1] <= t
        if max_run_length is not None:  # at most R + 1 rows: one tail row holds r >= R
            assert len(lengths) <= max_run_length + 1
            assert np.count_nonzero(lengths >= max_run_length) <= 1
        assert np.all(probabilities >= 0) and np.isfinite(probabilities).all()
        assert probabilities.sum() == pytest.approx(1.0, abs=1e-12)
        dense = bocd.run_length_posterior
        assert len(dense) == lengths[-1] + 1 and dense.sum() == pytest.approx(1.0, abs=1e-12)
        assert np.all(dense >= 0)
        assert len(bocd.beliefs) == len(lengths)
        weights = bocd.filtered_weights
        assert len(weights) == len(bocd.filtered_beliefs) == len(lengths) - 1
        assert weights.sum() == pytest.approx(1.0, abs=1e-12) and np.all(weights >= 0)
        assert bocd.map_run_length == lengths[np.argmax(probabilities)]
        assert bocd.changepoint_probability(bocd.map_run_length) == probabilities.max()
        mean, var = bocd.theta_moments("predictive")
        assert 0.0 <= mean <= 1.0 and var >= 0.0
        assert np.isfinite(bocd.log_evidence) and bocd.log_evidence <= 1e-12


@settings(max_examples=30, deadline=None)
@given(
    first=binomial_sequences(12),
    second=binomial_sequences(12),
    hazard=st.one_of(st.floats(1e-3, 0.999), st.just(decreasing_hazard)),
    threshold=st.sampled_from([0.0, 1e-10, 0.01]),
)
def test_reset_reproduces_a_fresh_run(first, second, hazard, threshold):
    model = BetaBinomial(0.5, 0.5)
    used = ChangepointDetector(model, hazard, prune_threshold=threshold, max_run_length=8)
    for k, n in first:
        used.update(model.stats(k, n))
    assert used.reset() is used
    fresh = ChangepointDetector(model, hazard, prune_threshold=threshold, max_run_length=8)
    for bocd in (used, fresh):
        assert bocd.t == 0 and bocd.log_evidence == 0.0
        np.testing.assert_array_equal(bocd.run_length_posterior, [1.0])
    for k, n in second:
        used.update(model.stats(k, n))
        fresh.update(model.stats(k, n))
        assert used.t == fresh.t
        assert used.log_evidence == fresh.log_evidence
        np.testing.assert_array_equal(used.run_lengths, fresh.run_lengths)
        np.testing.assert_array_equal(used.run_length_posterior, fresh.run_length_posterior)
        np.testing.assert_array_equal(used.filtered_weights, fresh.filtered_weights)
        assert used.beliefs.allclose(fresh.beliefs, rtol=0, atol=0)


def test_pruning_keeps_r0_and_the_map():
    model = BetaBinomial(1.0, 1.0)
    bocd = ChangepointDetector(model, hazard=0.01, prune_threshold=0.9)
    for _ in range(20):
        bocd.update(model.stats(3, 5))
        lengths = bocd.run_lengths
        assert lengths[0] == 0 and bocd.map_run_length in lengths and len(lengths) <= 2
        assert bocd.run_length_probabilities.sum() == pytest.approx(1.0)


def test_max_run_length_caps_the_live_set():
    model = NormalKnownVariance(0.0, 1.0, 1.0)
    bocd = ChangepointDetector(model, hazard=0.1, prune_threshold=0.0, max_run_length=5)
    for value in np.linspace(-1, 1, 30):
        bocd.update(model.stats([value]))
        assert len(bocd.run_lengths) <= 6 and np.count_nonzero(bocd.run_lengths >= 5) <= 1
    assert bocd.run_length_posterior.sum() == pytest.approx(1.0)


def _moments_close(a, b, rtol):
    return all(np.allclose(x, y, rtol=rtol, atol=0) for x, y in zip(a, b, strict=True))


def test_the_cap_keeps_the_tail_mass_on_a_stationary_stream():
    """Issue 28's reproducer, scaled down (cap 200, 2,000 steps; the default cap of 10⁴ on 10⁵
    steps, within 1 %, is ``bam-rl drill bocd-cap``). Before, the run lengths past the cap
    were dropped: the MAP run length fell to 0, the mean moved by ~10 % and the variance
    grew ~100-fold."""
    model = NormalGamma()
    capped = ChangepointDetector(model, hazard=1 / 100, max_run_length=200)
    uncapped = ChangepointDetector(model, hazard=1 / 100, max_run_length=None)
    for t, value in enumerate(np.random.default_rng(0).normal(3.0, 1.0, 2000), start=1):
        s = model.stats([value])
        capped.update(s)
        uncapped.update(s)
        if t % 100 == 0:
            assert capped.map_run_length == uncapped.map_run_length == t
            (m1, v1), (m2, v2) = capped.theta_moments(), uncapped.theta_moments()
            np.testing.assert_allclose(m1, m2, rtol=1e-3)
            np.testing.assert_allclose(v1, v2, rtol=0.1)  # the rows past the cap, now one
            assert _moments_close(
                model.mean(capped.map_belief), model.mean(uncapped.map_belief), 1e-12
            )
    assert len(capped.run_lengths) <= 201


def test_a_new_segment_takes_over_the_tail():
    model = NormalKnownVariance(0.0, 10.0, 1.0)
    bocd = ChangepointDetector(model, hazard=1 / 50, max_run_length=20)
    rng = np.random.default_rng(1)
    for value in np.concatenate([rng.normal(0, 1, 100), rng.normal(8, 1, 100)]):
        bocd.update(model.stats([value]))
    assert bocd.map_run_length == 100  # the second segment, counted past the cap
    assert float(model.mean(bocd.map_belief)) == pytest.approx(8.0, abs=0.3)
    assert np.count_nonzero(bocd.run_lengths >= 20) == 1


def test_callable_hazard_sees_previous_run_lengths():
    seen = []

    def hazard(r):
        seen.append(np.array(r))
        return np.full(np.shape(r), 0.2)

    model = BetaBinomial()
    bocd = ChangepointDetector(model, hazard, prune_threshold=0.0)
    for _ in range(3):
        bocd.update(model.stats(1, 2))
    assert [list(r) for r in seen] == [[0], [0, 1], [0, 1, 2]]


def test_vector_theta_moments_and_deepcopy():
    """Dirichlet θ: element-wise mixture moments; a deep copy evolves independently."""
    model = DirichletCategorical(alpha=1.0, n_categories=3)
    bocd = ChangepointDetector(model, 0.1, prune_threshold=0.0)
    for obs in ([0, 0], [0, 1], [2, 2, 2]):
        bocd.update(model.stats(observations=obs))
    for kind in ("filtered", "predictive"):
        mean, var = bocd.theta_moments(kind)
        weights = bocd.filtered_weights if kind == "filtered" else bocd.run_length_probabilities
        beliefs = bocd.filtered_beliefs if kind == "filtered" else bocd.beliefs
        np.testing.assert_allclose(mean, weights @ beliefs.mean, rtol=1e-12)
        second = weights @ (beliefs.variance + beliefs.mean**2)
        np.testing.assert_allclose(var, second - mean**2, rtol=1e-10)
        assert mean.shape == (3,) and mean.sum() == pytest.approx(1.0)
    clone = copy.deepcopy(bocd)
    clone.update(model.stats(observations=[1]))
    assert clone.t == bocd.t + 1 and len(bocd.run_lengths) == 4


def test_matrix_fields_bayesian_linear_regression():
    """Matrix-valued natural parameters and tuple-valued θ moments (M, σ²) work unchanged."""
    rng = np.random.default_rng(18)
    for model in (
        BayesianLinearRegression(dim_in=3, dim_out=2, prior_precision=1.0),
        BayesianLinearRegressionNIG(dim_in=3, dim_out=2, prior_precision=1.0),
    ):
        bocd = ChangepointDetector(model, hazard=1e-12)
        total = model.zeros()
        for _ in range(5):
            X = rng.normal(size=(4, 3))
            s = model.stats(X, X @ np.ones((3, 2)) + 0.1 * rng.normal(size=(4, 2)))
            bocd.update(s)
            total = total + s
        assert bocd.log_evidence == pytest.approx(model.log_marginal(model.prior, total), rel=1e-10)
        mean, _ = bocd.theta_moments("filtered")
        expected = (model.prior + total).mean
        if isinstance(expected, tuple):
            for got, want in zip(mean, expected, strict=True):
                np.testing.assert_allclose(got, want, rtol=1e-8)
        else:
            np.testing.assert_allclose(mean, expected, rtol=1e-8)


def test_before_any_data():
    model = GammaPoisson(2.0, 1.0)
    bocd = ChangepointDetector(model)
    assert bocd.t == 0 and bocd.log_evidence == 0.0 and bocd.map_run_length == 0
    np.testing.assert_array_equal(bocd.run_length_posterior, [1.0])
    np.testing.assert_array_equal(bocd.filtered_weights, [1.0])
    assert bocd.map_belief.allclose(model.prior)
    for kind in ("filtered", "predictive"):
        mean, var = bocd.theta_moments(kind)
        assert mean == pytest.approx(2.0) and var == pytest.approx(2.0)
    assert math.isnan(bocd.last_log_predictive)


# ------------------------------------------------------------------- bad input


@pytest.mark.parametrize("hazard", [0, 1, -0.1, 1.5, math.nan, math.inf, "x", None, True])
def test_bad_constant_hazard(hazard):
    with pytest.raises(ValueError, match=r"hazard.*\(0, 1\)"):
        ChangepointDetector(BetaBinomial(), hazard)


@pytest.mark.parametrize(
    "returned",
    [
        lambda r: np.zeros(len(r)),
        lambda r: np.ones(len(r)),
        lambda r: np.full(len(r), np.nan),
        lambda r: np.full(len(r), 1.5),
        lambda r: np.full(len(r) + 1, 0.5),
        lambda r: "bad",
    ],
)
def test_callable_hazard_returning_bad_values(returned):
    model = BetaBinomial()
    bocd = ChangepointDetector(model, returned)
    with pytest.raises(ValueError, match=r"hazard"):
        bocd.update(model.stats(1, 1))
    assert bocd.t == 0  # nothing changed


@pytest.mark.parametrize("max_run_length", [0, -3, 2.5, True, "5"])
def test_bad_max_run_length(max_run_length):
    with pytest.raises(ValueError, match="max_run_length"):
        ChangepointDetector(BetaBinomial(), 0.1, max_run_length=max_run_length)


@pytest.mark.parametrize("threshold", [-1e-3, 1.0, 2.0, math.nan, "a", None])
def test_bad_prune_threshold(threshold):
    with pytest.raises(ValueError, match="prune_threshold"):
        ChangepointDetector(BetaBinomial(), 0.1, prune_threshold=threshold)


@pytest.mark.parametrize("lag", [-1, 1.5, "1", None, True])
def test_bad_lag(lag):
    with pytest.raises(ValueError, match="lag"):
        ChangepointDetector(BetaBinomial()).changepoint_probability(lag)


def test_bad_kind_and_model():
    with pytest.raises(ValueError, match="kind"):
        ChangepointDetector(BetaBinomial()).theta_moments("smoothed")
    with pytest.raises(ValueError, match="model"):
        ChangepointDetector("beta", 0.1)


def test_bad_statistics():
    model = BetaBinomial()
    bocd = ChangepointDetector(model, 0.1)
    other_family = GammaPoisson().stats([1, 2])
    with pytest.raises(ValueError, match=r"\bs\b"):
        bocd.update(other_family)
    with pytest.raises(ValueError, match=r"\bs\b"):
        bocd.update(np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"\bs\b.*single datum"):
        bocd.update(model.stats([1, 2], [3, 3], axis=()))
    dirichlet = ChangepointDetector(DirichletCategorical(alpha=1.0, n_categories=3))
    with pytest.raises(ValueError, match=r"\bs\b"):
        dirichlet.update(DirichletCategorical(alpha=1.0, n_categories=4).stats([0, 3]))
    normal = ChangepointDetector(NormalKnownVariance(0.0, 1.0, noise_var=1.0))
    with pytest.raises(ValueError, match=r"\bs\b"):
        normal.update(NormalKnownVariance(0.0, 1.0, noise_var=2.0).stats([0.5]))
    # an equal but distinct model instance is fine
    same = BetaBinomial()
    bocd.update(same.stats(1, 1))
    assert bocd.t == 1
    assert bocd.t == 1 and len(bocd.run_lengths) == 2


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_data=st.integers(0, 40))
def test_sample_index_draws_what_rng_choice_draws(seed, n_data):
    """BOCD Thompson sampling draws a run length by ``sample_index``: the same index and the
    same generator state afterwards as ``rng.choice(n, p=probabilities)``."""
    model = NormalKnownVariance(0.0, 1.0, 0.25)
    detector = ChangepointDetector(model, 0.05)
    data = np.random.default_rng(seed).normal(size=n_data)
    for y in data:
        detector.update(model.stats(np.array([y])))
    probabilities = detector.run_length_probabilities
    ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
    for _ in range(5):
        assert detector.sample_index(ours) == int(
            theirs.choice(probabilities.size, p=probabilities)
        )
    assert ours.random() == theirs.random()
    row = detector.sample_index(ours)
    one, stacked = detector.belief_at(row), detector.beliefs[row]
    for name in one.fields:
        assert np.array_equal(one.fields[name], stacked.fields[name])


def test_sample_index_follows_every_update_reset_and_snapshot():
    """``sample_index`` keeps its cumulative sum between draws; an update, a reset or another
    detector (a snapshot) must never draw from a stale one."""
    model = BetaBinomial()
    detector = ChangepointDetector(model, 0.05)
    ours, theirs = np.random.default_rng(3), np.random.default_rng(3)
    data = np.random.default_rng(4).integers(0, 2, 60)

    def check(bocd):
        probabilities = bocd.run_length_probabilities
        for _ in range(3):
            assert bocd.sample_index(ours) == int(
                theirs.choice(probabilities.size, p=probabilities)
            )

    for i, y in enumerate(data):
        detector.update(model.stats(successes=int(y), trials=1))
        check(detector)
        if i == 30:
            detector.reset()
            check(detector)
    copy_ = detector.snapshot()
    copy_.update(model.stats(successes=1, trials=1))
    check(copy_)
    check(detector)


def test_a_snapshot_and_its_original_update_independently():
    model = BetaBinomial()
    original = ChangepointDetector(model, 0.05, max_run_length=20)
    for y in [1, 0, 1, 1, 0, 1] * 5:
        original.update(model.stats(successes=y, trials=1))
    before = (
        original.t,
        original.run_lengths.copy(),
        original.log_run_length_probabilities.copy(),
        {k: v.copy() for k, v in original.beliefs.fields.items()},
        original.log_evidence,
    )
    snapshot = original.snapshot()
    for y in [0, 0, 0, 1]:
        snapshot.update(model.stats(successes=y, trials=1))
    after = (
        original.t,
        original.run_lengths,
        original.log_run_length_probabilities,
        original.beliefs.fields,
        original.log_evidence,
    )
    assert after[0] == before[0] and after[4] == before[4]
    np.testing.assert_array_equal(after[1], before[1])
    np.testing.assert_array_equal(after[2], before[2])
    for name in before[3]:
        np.testing.assert_array_equal(after[3][name], before[3][name])
    # and the other way round: the original moves on, the snapshot stays
    frozen = (snapshot.t, snapshot.run_lengths.copy(), snapshot.log_evidence)
    original.update(model.stats(successes=1, trials=1))
    assert (snapshot.t, snapshot.log_evidence) == (frozen[0], frozen[2])
    np.testing.assert_array_equal(snapshot.run_lengths, frozen[1])
    # both continue exactly like a deep copy would
    deep = copy.deepcopy(snapshot)
    for y in [1, 1, 0]:
        snapshot.update(model.stats(successes=y, trials=1))
        deep.update(model.stats(successes=y, trials=1))
    np.testing.assert_array_equal(
        snapshot.log_run_length_probabilities, deep.log_run_length_probabilities
    )
